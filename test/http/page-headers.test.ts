/** setPageHeaders: the headers /ops and /preview send, the one difference being where forms may post. */
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { setPageHeaders } from '../../src/http/page-headers.js';

const response = () => new ServerResponse(new IncomingMessage(new Socket()));

describe('setPageHeaders', () => {
  it('never cached, sniffed or framed; only its own scripts; forms where told', () => {
    for (const formAction of ["'self'", "'none'"] as const) {
      const res = response();
      setPageHeaders(res, formAction);
      expect(res.getHeader('cache-control')).toBe('no-store');
      expect(res.getHeader('x-content-type-options')).toBe('nosniff');
      expect(res.getHeader('x-frame-options')).toBe('DENY');
      expect(res.getHeader('referrer-policy')).toBe('no-referrer');
      const csp = String(res.getHeader('content-security-policy'));
      expect(csp).toMatch(/^default-src 'none'; script-src 'self';/);
      expect(csp).toContain(`form-action ${formAction};`);
      expect(csp).toContain("frame-ancestors 'none'");
    }
  });
});
