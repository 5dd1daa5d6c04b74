/**
 * The signature of events out (src/events-out/sign.ts) against the receiver's snippet of docs/webhooks-out.md:
 * what we sign, the snippet accepts; a changed body, another secret, a time outside the five minutes or a header
 * without `v1` it refuses.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SIGNATURE_HEADER, signatureHeader } from '../../src/events-out/sign.js';
import { documentedVerify } from './snippet.js';

const SECRET = 'whsec-test-0123456789abcdef';
const body = JSON.stringify({
  id: 'evt_000000000000000000000001',
  type: 'payment.completed',
  ref: 'MC-7K2QX',
  key: 'pay_1',
  state: 'completed',
  amount: '5000',
  currency: 'UGX',
  created: '2026-12-02T09:14:03.512Z',
});
const verify = documentedVerify();
const now = 1_800_000_000;

describe('Momo-Signature', () => {
  it("is Stripe's scheme: t=<seconds>,v1=<hex HMAC-SHA256 of '<t>.<body>'>", () => {
    expect(SIGNATURE_HEADER).toBe('Momo-Signature');
    const header = signatureHeader(SECRET, body, now);
    const hex = createHmac('sha256', SECRET).update(`${now}.${body}`).digest('hex');
    expect(header).toBe(`t=${now},v1=${hex}`);
  });

  it('the documented snippet accepts what we sign, as a string or the raw bytes', () => {
    const header = signatureHeader(SECRET, body, now);
    expect(verify(SECRET, body, header, 300, now)).toBe(true);
    expect(verify(SECRET, Buffer.from(body), header, 300, now + 299)).toBe(true);
  });

  it('the documented snippet refuses a tampered body, another secret, an old or future time, no v1', () => {
    const header = signatureHeader(SECRET, body, now);
    expect(verify(SECRET, body.replace('5000', '9000'), header, 300, now)).toBe(false);
    expect(verify(SECRET, `${body} `, header, 300, now)).toBe(false);
    expect(verify('another-secret-0123456789', body, header, 300, now)).toBe(false);
    expect(verify(SECRET, body, header, 300, now + 301)).toBe(false);
    expect(verify(SECRET, body, header, 300, now - 301)).toBe(false);
    expect(verify(SECRET, body, `t=${now}`, 300, now)).toBe(false);
    expect(verify(SECRET, body, undefined, 300, now)).toBe(false);
    // A time changed in the header breaks the signature, whatever the window.
    expect(verify(SECRET, body, header.replace(`t=${now}`, `t=${now + 1}`), 300, now)).toBe(false);
  });
});
