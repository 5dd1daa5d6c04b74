/**
 * The error tree (stripe-node `src/Error.ts`, grammY `GrammyError` vs `HttpError`). `MomoError` and its
 * subclasses mean "the service said no" and carry the status; `ConnectionError` means "we could not reach
 * it" (no answer, or none in time) and deliberately is not a MomoError. `errorFromResponse` is the one
 * place that maps an answer to a class.
 */
import { parseRetryAfter } from './retry.js';

export interface MomoErrorInit {
  /** HTTP status of the answer; 0 when the client refused the request before sending it. */
  status: number;
  body?: unknown;
  requestId?: string | undefined;
}

export class MomoError extends Error {
  readonly status: number;
  readonly body: unknown;
  readonly requestId: string | undefined;

  constructor(message: string, init: MomoErrorInit) {
    super(message);
    this.name = new.target.name;
    this.status = init.status;
    this.body = init.body;
    this.requestId = init.requestId;
  }
}

/** 400, or a request refused locally (status 0): field name -> messages. */
export class ValidationError extends MomoError {
  readonly fields: Record<string, string[]>;

  constructor(message: string, init: MomoErrorInit & { fields: Record<string, string[]> }) {
    super(message, init);
    this.fields = init.fields;
  }

  /** A request refused before sending: status 0, no body. */
  static local(fields: Record<string, string[]>): ValidationError {
    return new ValidationError(`refused before sending: ${describeFields(fields) ?? 'invalid'}`, { status: 0, fields });
  }
}

/** 401: the API key is wrong. */
export class AuthenticationError extends MomoError {}
/** 403: the resource belongs to someone else, or the key lacks a permission. */
export class PermissionError extends MomoError {}
/** 404 */
export class NotFoundError extends MomoError {}
/** 405: the method is not allowed on that path (for example a POST to a read-only endpoint). */
export class MethodNotAllowedError extends MomoError {}
/** 406: the requested format is not supported (the service answers JSON). */
export class NotAcceptableError extends MomoError {}
/** 415: the body's media type is not one the service reads. */
export class UnsupportedMediaTypeError extends MomoError {}
/** 409 `Duplicate Request Detected!`: a request with this Duplicate-Check-Key was already accepted. */
export class DuplicateRequestError extends MomoError {}

/** 429: throttled (30 reads, 3000 writes a minute). */
export class RateLimitError extends MomoError {
  /** How long the service asked us to wait (Retry-After), when it said. */
  readonly retryAfterMs: number | undefined;

  constructor(message: string, init: MomoErrorInit & { retryAfterMs: number | undefined }) {
    super(message, init);
    this.retryAfterMs = init.retryAfterMs;
  }
}

/** 5xx: the service failed or is in maintenance. */
export class ServiceError extends MomoError {}

/** No answer: the connection failed or the answer did not arrive within the timeout. */
export class ConnectionError extends Error {
  constructor(message: string, options: { cause: unknown }) {
    super(message, options);
    this.name = 'ConnectionError';
  }
}

const DUPLICATE_TEXT = 'Duplicate Request Detected!';

/** The one mapping from an error answer (main API or vending envelope) to the error tree. */
export function errorFromResponse(status: number, body: unknown, headers: Headers): MomoError {
  const init: MomoErrorInit = {
    status,
    body,
    requestId: requestIdOf(headers),
  };
  const text = messageOf(body);
  const message = `${status}: ${text ?? describeFields(fieldsOf(body)) ?? 'no detail'}`;
  if (status === 400) return new ValidationError(message, { ...init, fields: fieldsOf(body) });
  if (status === 401) return new AuthenticationError(message, init);
  if (status === 403) return new PermissionError(message, init);
  if (status === 404) return new NotFoundError(message, init);
  if (status === 405) return new MethodNotAllowedError(message, init);
  if (status === 406) return new NotAcceptableError(message, init);
  if (status === 415) return new UnsupportedMediaTypeError(message, init);
  if (status === 409 && text?.includes(DUPLICATE_TEXT)) return new DuplicateRequestError(message, init);
  if (status === 429) {
    return new RateLimitError(message, { ...init, retryAfterMs: parseRetryAfter(headers.get('retry-after')) });
  }
  if (status >= 500) return new ServiceError(message, init);
  return new MomoError(message, init);
}

/** The service's id of one request, when it sends one (for support). */
export function requestIdOf(headers: Headers): string | undefined {
  return headers.get('x-request-id') ?? headers.get('request-id') ?? undefined;
}

/** `detail` (main API), `message` (vending envelope), or a text body. */
function messageOf(body: unknown): string | undefined {
  if (typeof body === 'string') return body.trim() === '' ? undefined : body;
  if (isRecord(body)) {
    if (typeof body.detail === 'string') return body.detail;
    if (typeof body.message === 'string') return body.message;
  }
  return undefined;
}

/**
 * The 400 field map: every key whose value is a list (of message strings, as the spec shows). A vending
 * error envelope carries its map in `data`.
 */
function fieldsOf(body: unknown): Record<string, string[]> {
  const source = isRecord(body) && typeof body.status === 'string' && isRecord(body.data) ? body.data : body;
  if (!isRecord(source)) return {};
  // fromEntries makes each key its own property, `__proto__` too (an assignment would set the prototype).
  return Object.fromEntries(
    Object.entries(source).flatMap(([key, value]) =>
      Array.isArray(value) ? [[key, value.map((m) => (typeof m === 'string' ? m : JSON.stringify(m)))]] : [],
    ),
  );
}

function describeFields(fields: Record<string, string[]>): string | undefined {
  const parts = Object.entries(fields).map(([key, messages]) => `${key}: ${messages.join(' ')}`);
  return parts.length === 0 ? undefined : parts.join('; ');
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
