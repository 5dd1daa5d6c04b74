/**
 * The headers of the product's own pages (/ops, /preview): never cached, never sniffed, never framed, no
 * referrer, and a Content-Security-Policy that allows only the page's own scripts, styles and requests.
 * `formAction`: where the page's forms may post ('self' for /ops' sign-in and searches, 'none' where the page
 * has no form that posts).
 */
import type { ServerResponse } from 'node:http';

export function setPageHeaders(res: ServerResponse, formAction: "'self'" | "'none'"): void {
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader(
    'Content-Security-Policy',
    `default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action ${formAction}; frame-ancestors 'none'`,
  );
}
