/**
 * One cookie of a request, by name (the operator page's session and sign-in cookies, the preview's CSRF
 * token). Its value as sent, trimmed; undefined when absent. The product's cookies hold base64url tokens
 * only, so no decoding is done.
 */
import type { IncomingMessage } from 'node:http';

export function cookieOf(req: IncomingMessage, name: string): string | undefined {
  const header = req.headers.cookie;
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
