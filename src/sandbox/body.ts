/**
 * Request bodies of the main API: JSON, urlencoded forms or multipart forms, scoped to the routers that
 * use them (never global: the app is mounted beside Slack's Bolt route). Form fields named `<name>.<key>`
 * (`metadata.chat`, `subscription_settings.frequency`) become one object under `<name>`.
 * Any other content type on a request with a body is 415.
 */
import express, { type RequestHandler } from 'express';
import { ApiError, detailError } from './errors.js';

const LIMIT = '100kb';
const json = express.json({ limit: LIMIT, strict: false });
const urlencoded = express.urlencoded({ limit: LIMIT, extended: false });
const multipart = express.raw({ limit: LIMIT, type: 'multipart/form-data' });

/** JSON only (vending group, sandbox controls): `req.body` is `{}` when no JSON body came. */
export const jsonBody: RequestHandler[] = [
  json,
  (req, _res, next) => {
    req.body ??= {};
    next();
  },
];

/**
 * Folds `<name>.<key>` fields into objects; a repeated field keeps its last value. A name with a `__proto__`
 * part is refused (400): `out.__proto__` is Object.prototype, and writing into it changes every object of the
 * process.
 */
export function foldFormFields(fields: Iterable<[string, unknown]>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, raw] of fields) {
    if (name.split('.').includes('__proto__'))
      throw new ApiError(400, { non_field_errors: [`"${name}" is not a field name.`] });
    const value = Array.isArray(raw) ? raw[raw.length - 1] : raw;
    const dot = name.indexOf('.');
    if (dot > 0) {
      const parent = name.slice(0, dot);
      const existing = Object.hasOwn(out, parent) ? out[parent] : undefined;
      const obj = typeof existing === 'object' && existing !== null ? (existing as Record<string, unknown>) : {};
      obj[name.slice(dot + 1)] = value;
      out[parent] = obj;
    } else {
      out[name] = value;
    }
  }
  return out;
}

const hasBody = (req: express.Request) =>
  req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;

/** Parses the body (when there is one) into `req.body` as a plain object. */
export const parseBody: RequestHandler = async (req, res, next) => {
  if (!hasBody(req)) {
    req.body = {};
    return next();
  }
  const type = req.headers['content-type'] ?? '';
  const run = (parser: RequestHandler) =>
    new Promise<void>((resolve, reject) => parser(req, res, (err?: unknown) => (err ? reject(err) : resolve())));
  if (req.is('application/json') || req.is('+json')) {
    await run(json);
    if (typeof req.body !== 'object' || req.body === null || Array.isArray(req.body)) {
      const got = Array.isArray(req.body) ? 'list' : typeof req.body;
      throw new ApiError(400, {
        non_field_errors: [`Invalid data. Expected a dictionary, but got ${got}.`],
      });
    }
  } else if (req.is('application/x-www-form-urlencoded')) {
    await run(urlencoded);
    req.body = foldFormFields(Object.entries(req.body as Record<string, unknown>));
  } else if (req.is('multipart/form-data')) {
    await run(multipart);
    const form = await new Response(req.body as unknown as BodyInit, { headers: { 'content-type': type } })
      .formData()
      .catch(() => {
        throw detailError(400, 'Multipart form parse error.');
      });
    const fields: [string, string][] = [];
    form.forEach((v, k) => {
      if (typeof v === 'string') fields.push([k, v]);
    });
    req.body = foldFormFields(fields);
  } else {
    throw detailError(415, `Unsupported media type "${type}" in request.`);
  }
  next();
};
