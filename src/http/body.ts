/**
 * Reads a request body for the product's own routes (USSD gateways, the service's webhooks): the bytes with
 * raw-body (limit, declared length, aborted requests), inflated with node:zlib when the sender compressed
 * them, then parsed with the platform's own parsers, URLSearchParams for a form and JSON.parse for JSON.
 * On a bare express route this costs less CPU a request than express.urlencoded / json (body-parser: type-is,
 * iconv-lite decoding, qs), and answer time counts on every USSD hop and every webhook.
 *
 * The contract is body-parser's, so the routes' error handlers read it the same way:
 * - a body of another media type is not read and `req.body` stays undefined (`anyType` reads any);
 * - failures go to next(err) with body-parser's `status` and `type`: `entity.too.large` (413),
 *   `entity.parse.failed` (400, JSON that does not parse), `charset.unsupported` and `encoding.unsupported`
 *   (415), `encoding.invalid` (400, compressed data that does not inflate) and raw-body's own
 *   (`request.aborted`, `request.size.invalid`, 400);
 * - an empty body is `{}`; only utf-8 text is read; a form field given twice keeps its last value;
 * - `verify` sees the bytes before they are parsed, as body-parser's does; what it throws goes to next(err)
 *   (status 403 unless the error carries one). The WhatsApp webhook checks its signature there.
 * The embedded sandbox keeps body-parser (src/sandbox/body.ts): it emulates the service's API, multipart
 * forms and that API's own error bodies included, and its speed is not the product's.
 */
import { parse as parseContentType } from 'content-type';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable, Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import getRawBody from 'raw-body';

export type BodyKind = 'form' | 'json';

export interface BodyOptions {
  /** Most bytes read (after inflating): a number or raw-body's `'16kb'` form. */
  limit: number | string;
  /** Read the body whatever the Content-Type says (the service's webhooks); default: only the kind's own. */
  anyType?: boolean;
  /** Checks the body's bytes (after inflating) before they are parsed; throws to refuse the request. Default none. */
  verify?: (req: IncomingMessage, body: Buffer) => void;
}

/**
 * A middleware on Node's own request and response: it serves on express routes and on direct ones
 * (direct-routes.ts) alike.
 */
export type BodyReader = (
  req: IncomingMessage & { body?: unknown },
  res: ServerResponse,
  next: (err?: unknown) => void,
) => void;

/** Drops a leading byte order mark, as raw-body's own decoding (iconv-lite) does. */
const UTF8 = new TextDecoder('utf-8');

const MEDIA_TYPE: Record<BodyKind, string> = { form: 'application/x-www-form-urlencoded', json: 'application/json' };

/** An error as body-parser makes them (http-errors): a message, a status and a type. */
function bodyError(status: number, type: string, message: string): Error {
  return Object.assign(new Error(message), { status, statusCode: status, type, expose: true });
}

/** The request's media type and charset, lower case; none when the header is absent or malformed. */
function contentTypeOf(header: string | undefined): { type: string; charset?: string } | undefined {
  if (!header) return undefined;
  try {
    const parsed = parseContentType(header);
    return { type: parsed.type, charset: parsed.parameters.charset?.toLowerCase() };
  } catch {
    return undefined;
  }
}

/** The body as sent (with its declared length) or inflated; undefined for an encoding not supported. */
function source(
  req: IncomingMessage,
  encoding: string,
): { stream: Readable; inflate?: Transform; length?: string } | undefined {
  if (encoding === 'identity') return { stream: req, length: req.headers['content-length'] };
  const inflate =
    encoding === 'gzip' || encoding === 'x-gzip'
      ? createGunzip()
      : encoding === 'deflate'
        ? createInflate()
        : encoding === 'br'
          ? createBrotliDecompress()
          : undefined;
  return inflate ? { stream: req.pipe(inflate), inflate } : undefined;
}

/** Middleware reading a body of `kind` into `req.body`. */
export function readBody(kind: BodyKind, options: BodyOptions): BodyReader {
  return (req, _res, next) => {
    const type = contentTypeOf(req.headers['content-type']);
    if (!options.anyType && type?.type !== MEDIA_TYPE[kind]) return next();
    const charset = type?.charset;
    if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
      return next(bodyError(415, 'charset.unsupported', `unsupported charset "${charset.toUpperCase()}"`));
    }
    const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
    const body = source(req, encoding);
    if (!body) return next(bodyError(415, 'encoding.unsupported', `unsupported content encoding "${encoding}"`));
    // raw-body's promise, not its callback: it wraps a callback in an AsyncResource on every request.
    getRawBody(body.stream, { length: body.length, limit: options.limit }).then(
      (bytes) => parsed(req, bytes, kind, options, next),
      (err: unknown) => failed(req, body, err, next),
    );
  };
}

/** The body read: verified (options.verify) and parsed into `req.body`. */
function parsed(
  req: IncomingMessage & { body?: unknown },
  bytes: Buffer,
  kind: BodyKind,
  options: BodyOptions,
  next: (err?: unknown) => void,
): void {
  if (options.verify) {
    try {
      options.verify(req, bytes);
    } catch (error) {
      const status = (error as { status?: unknown }).status;
      return next(
        typeof status === 'number'
          ? error
          : bodyError(403, 'entity.verify.failed', error instanceof Error ? error.message : 'body refused'),
      );
    }
  }
  const text = UTF8.decode(bytes);
  if (kind === 'form') {
    req.body = Object.fromEntries(new URLSearchParams(text));
    return next();
  }
  if (text.trim() === '') {
    req.body = {};
    return next();
  }
  try {
    req.body = JSON.parse(text);
  } catch (error) {
    return next(bodyError(400, 'entity.parse.failed', error instanceof Error ? error.message : 'invalid JSON'));
  }
  next();
}

/** The body could not be read: what is left of the request is read and dropped, so its connection stays usable. */
function failed(
  req: IncomingMessage,
  body: { inflate?: Transform },
  err: unknown,
  next: (err?: unknown) => void,
): void {
  if (body.inflate) {
    req.unpipe(body.inflate);
    body.inflate.destroy();
  }
  req.resume();
  // raw-body's errors carry a status; a zlib error (data that does not inflate) does not.
  const status = (err as { status?: unknown }).status;
  next(typeof status === 'number' ? err : bodyError(400, 'encoding.invalid', 'compressed body could not be inflated'));
}

/**
 * What a route answers for a body `readBody` refused: the status and the reason, said the same on every
 * route (never the body itself: it can hold a PIN). Undefined for an error that is not the reader's (a route's
 * own, a 500).
 */
export function bodyRefusal(err: unknown): { status: number; reason: string } | undefined {
  const type = (err as { type?: unknown } | null)?.type;
  if (typeof type !== 'string') return undefined;
  switch (type) {
    case 'entity.parse.failed':
      return { status: 400, reason: 'body is not valid JSON' };
    case 'entity.too.large':
      return { status: 413, reason: 'body too large' };
    case 'charset.unsupported':
    case 'encoding.unsupported':
      return { status: 415, reason: 'body must be utf-8, uncompressed or gzip, deflate or br' };
    default:
      return { status: 400, reason: 'body could not be read' };
  }
}

/**
 * A request answered before its body was read to the end (Bolt's 413 past its body limit stops reading
 * mid-body, as raw-body does on any error) leaves the rest of that body on its keep-alive connection, and the
 * connection then never delivers its next request: found by the Slack fuzz run, a request hung behind a
 * 1.1 MB body refused with 413. Once the answer is out, the rest is read and dropped, as Node itself does for
 * a body nobody started to read. Mounted first on the product's app, for every route.
 */
export const drainUnreadBodies = (req: IncomingMessage, res: ServerResponse, next: () => void): void => {
  res.once('finish', () => {
    if (!req.complete) req.resume();
  });
  next();
};
