/** cookieOf: one cookie of a request by its exact name (the operator page's and the preview's tokens). */
import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { cookieOf } from '../../src/http/cookie.js';

function request(cookie?: string): IncomingMessage {
  const req = new IncomingMessage(new Socket());
  if (cookie !== undefined) req.headers.cookie = cookie;
  return req;
}

describe('cookieOf', () => {
  it('finds the cookie of that exact name among others, trimmed', () => {
    const req = request('momo_preview2=other; momo_preview = tok_en-1 ;theme=dark');
    expect(cookieOf(req, 'momo_preview')).toBe('tok_en-1');
    expect(cookieOf(req, 'momo_preview2')).toBe('other');
    expect(cookieOf(req, 'theme')).toBe('dark');
  });

  it('keeps an = inside the value and takes the first of a name given twice', () => {
    expect(cookieOf(request('a=b=c; a=d'), 'a')).toBe('b=c');
  });

  it('gives undefined without the cookie, without a header, or for a part with no name', () => {
    expect(cookieOf(request('theme=dark'), 'momo_preview')).toBeUndefined();
    expect(cookieOf(request(), 'momo_preview')).toBeUndefined();
    expect(cookieOf(request('=token; momo_preview'), 'momo_preview')).toBeUndefined();
    expect(cookieOf(request('preview=x'), 'view')).toBeUndefined();
  });
});
