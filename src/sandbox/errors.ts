/**
 * Errors in the spec's body shapes: `{detail}` for most, `{field: [messages]}` for validation (400).
 * Handlers throw ApiError; each router's error handler writes it.
 */
import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { ZodError, ZodType, output } from 'zod';
import type { Logger } from 'pino';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof body.detail === 'string' ? body.detail : `HTTP ${status}`);
  }
}

export const detailError = (status: number, detail: string, headers?: Record<string, string>): ApiError =>
  new ApiError(status, { detail }, headers);

export const fieldError = (field: string, message: string): ApiError => new ApiError(400, { [field]: [message] });

/** zod issues -> the spec's field -> messages map (`non_field_errors` for the body as a whole). */
export function zodFields(error: ZodError): Record<string, string[]> {
  const fields: Record<string, string[]> = {};
  for (const issue of error.issues) {
    const key = issue.path.length > 0 ? issue.path.join('.') : 'non_field_errors';
    (fields[key] ??= []).push(issue.message);
  }
  return fields;
}

/** Collects field errors of rules across fields, thrown together as one 400. */
export class FieldErrors {
  private readonly fields: Record<string, string[]> = {};
  add(field: string, message: string): void {
    (this.fields[field] ??= []).push(message);
  }
  throwIfAny(): void {
    if (Object.keys(this.fields).length > 0) throw new ApiError(400, this.fields);
  }
}

/** Parses a request body with a zod schema; a failure is a 400 with the field -> messages map. */
export function validate<S extends ZodType>(schema: S, body: unknown): output<S> {
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new ApiError(400, zodFields(parsed.error));
  return parsed.data;
}

/** 405 with the Allow header, for `router.route(path).all(...)` after the allowed methods. */
export const methodNotAllowed =
  (...allowed: string[]): RequestHandler =>
  (req) => {
    throw detailError(405, `Method "${req.method}" not allowed.`, { Allow: allowed.join(', ') });
  };

/** Maps a thrown error to a status and a message or body; body-parser errors keep their 4xx status. */
export function toApiError(err: unknown, log: Logger): ApiError {
  if (err instanceof ApiError) return err;
  const e = err as { status?: number; type?: string; message?: string };
  if (e.type === 'entity.parse.failed') return detailError(400, `JSON parse error - ${e.message ?? 'invalid JSON'}`);
  if (typeof e.status === 'number' && e.status >= 400 && e.status < 500) {
    return detailError(e.status, e.message ?? 'Bad request.');
  }
  log.error({ err }, 'sandbox request failed');
  return detailError(500, 'A server error occurred.');
}

/** The error handler of the main API and the sandbox controls: JSON `{detail}` or field map. */
export const apiErrorHandler =
  (log: Logger): ErrorRequestHandler =>
  (err, _req, res, _next) => {
    const apiError = toApiError(err, log);
    res.status(apiError.status).set(apiError.headers).json(apiError.body);
  };
