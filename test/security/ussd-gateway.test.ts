/**
 * Forged USSD gateway callbacks in production mode. A USSD request names the caller's phone number, which is
 * the user's identity: whoever may post to the route acts as any user. So the route is served only at
 * `/ussd/<gateway>/<USSD_CALLBACK_TOKEN>` and/or from USSD_ALLOWED_IPS; anything else is an unknown path.
 * Each attack here succeeded against the open routes of before (a forged body was a user).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDialer } from '../../adapters/ussd/dialer.js';
import { AtSession } from '../e2e/helpers.js';
import {
  CALLBACK_TOKEN,
  PIN,
  TELLER,
  VICTIM,
  postForm,
  startProductionProduct,
  type ProductionProduct,
} from './production.js';
import { keys } from '../../src/store/keys.js';

const TOKEN_PATH = `/ussd/africastalking/${CALLBACK_TOKEN}`;

let product: ProductionProduct;
beforeAll(async () => {
  product = await startProductionProduct();
});
afterAll(async () => {
  await product?.stop();
});

const at = (phoneNumber: string, text: string, sessionId = `forged-${Math.random().toString(36).slice(2)}`) => ({
  sessionId,
  serviceCode: '*384*123#',
  phoneNumber,
  networkCode: '63902',
  text,
});
const payments = () => product.sandbox.controls.payments().length;
/** What the app answers a path nobody serves, to compare the refusals with. */
async function unknownPath(path: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${product.url}${path}`, { method: 'POST', body: new URLSearchParams(at(VICTIM, '')) });
  return { status: res.status, body: await res.json() };
}

/** Walks a USSD payment up to the PIN screen through `path`: Sarah Nakato, 5000 UGX. */
async function upToPin(phone: string, path = TOKEN_PATH): Promise<AtSession> {
  const ussd = new AtSession(product.url, phone, undefined, path);
  expect(await ussd.dial()).toMatch(/^CON .*Pay someone/s);
  for (const answer of ['1', '1', '0772000001', 'Sarah', 'Nakato', '5000', '1', 'rent']) await ussd.answer(answer);
  expect(await ussd.answer('1')).toMatch(/PIN/);
  return ussd;
}

describe('the callback token', () => {
  it('a forged request without the token is an unknown path: 404, the same body, and no conversation', async () => {
    const before = payments();
    const forged = await postForm(product.url, '/ussd/africastalking', at(VICTIM, ''));
    expect(forged.status).toBe(404);
    expect(JSON.parse(forged.text)).toEqual({ detail: 'No route for POST /ussd/africastalking' });
    expect((await unknownPath('/no/such/route')).body).toEqual({ detail: 'No route for POST /no/such/route' });
    for (const gateway of ['hubtel', 'arkesel', 'nalo', 'beem']) {
      expect(
        (
          await fetch(`${product.url}/ussd/${gateway}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: '{}',
          })
        ).status,
      ).toBe(404);
    }
    expect(await product.app.store.get(keys.conversation({ channel: 'ussd', conversationId: VICTIM }))).toBeNull();
    expect(payments()).toBe(before);
  });

  it('the end-of-session report route takes the same guard: without or with a wrong token, 404; with it, taken', async () => {
    const report = {
      sessionId: 'forged-end',
      status: 'Failed',
      durationInMillis: '1000',
      hopsCount: '2',
      input: '1',
      lastAppResponse: 'CON x',
      errorMessage: '',
    };
    for (const path of [
      '/ussd/africastalking/events',
      `/ussd/africastalking/events/${CALLBACK_TOKEN}x`,
      '/ussd/africastalking/events/x',
    ]) {
      const forged = await postForm(product.url, path, report);
      expect(forged.status, path).toBe(404);
      expect(JSON.parse(forged.text), path).toEqual((await unknownPath(path)).body);
    }
    expect((await postForm(product.url, `/ussd/africastalking/events/${CALLBACK_TOKEN}`, report)).status).toBe(200);
  });

  it('a wrong token gets what an unknown path gets', async () => {
    for (const wrong of [
      `${CALLBACK_TOKEN}x`,
      CALLBACK_TOKEN.slice(0, -1),
      CALLBACK_TOKEN.toUpperCase(),
      'x',
      encodeURIComponent(`${CALLBACK_TOKEN}/`),
    ]) {
      const path = `/ussd/africastalking/${wrong}`;
      const forged = await postForm(product.url, path, at(VICTIM, ''));
      expect(forged.status).toBe(404);
      expect(JSON.parse(forged.text)).toEqual((await unknownPath(path)).body);
      expect(JSON.parse(forged.text)).toEqual({ detail: `No route for POST ${path}` });
    }
    expect(await product.app.store.get(keys.conversation({ channel: 'ussd', conversationId: VICTIM }))).toBeNull();
  });

  it('the gateway with the token is served: a whole payment', async () => {
    const before = payments();
    const ussd = await upToPin(TELLER);
    expect(await ussd.answer(PIN)).toMatch(/^END Sent: .* Ref MC-[A-Z0-9]+\./s);
    expect(payments()).toBe(before + 1);
  });

  it('npm run ussd dials the token route with --token', async () => {
    const phone = createDialer({ url: product.url, phone: TELLER, serviceCode: '*384*123#', token: CALLBACK_TOKEN });
    expect(await phone.dial()).toMatchObject({ final: false, text: expect.stringMatching(/Pay someone/) });
    await expect(createDialer({ url: product.url, phone: TELLER, serviceCode: '*384*123#' }).dial()).rejects.toThrow(
      /answered 404/,
    );
  });

  it('three wrong PINs through a forged gateway reach nothing: the real user still pays with their PIN', async () => {
    const before = payments();
    // The attacker walks the victim's conversation to the PIN and guesses, without the token.
    const text = ['1', '1', '0772000001', 'Sarah', 'Nakato', '5000', '1', 'rent', '1'];
    for (const guess of ['0000', '1111', '2222', '3333']) {
      const forged = await postForm(
        product.url,
        '/ussd/africastalking',
        at(VICTIM, [...text, guess].join('*'), 'forged-pin'),
      );
      expect(forged.status).toBe(404);
    }
    expect(await product.app.store.get(keys.pinFailures(`ussd:${VICTIM}`))).toBeNull();
    const victim = await upToPin(VICTIM);
    expect(await victim.answer(PIN)).toMatch(/^END Sent: .* Ref MC-[A-Z0-9]+\./s);
    expect(payments()).toBe(before + 1);
  });

  it('fuzzed tokens and paths are all unknown paths, and move nothing', async () => {
    const before = payments();
    await fc.assert(
      fc.asyncProperty(
        fc.string({ minLength: 1, maxLength: 60 }),
        fc.constantFrom('africastalking', 'hubtel', 'beem', 'nalo', 'arkesel'),
        async (token, gateway) => {
          fc.pre(token !== CALLBACK_TOKEN);
          const path = `/ussd/${gateway}/${encodeURIComponent(token)}`;
          const res = await fetch(`${product.url}${path}`, {
            method: 'POST',
            body: new URLSearchParams(at(VICTIM, '1')),
            signal: AbortSignal.timeout(10_000),
          });
          expect(res.status).toBe(404);
          await res.arrayBuffer();
        },
      ),
      { numRuns: 60 },
    );
    expect(payments()).toBe(before);
  });

  it('fuzzed bodies on the token route get a screen or a 4xx with a reason, never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(
          fc.constantFrom('sessionId', 'phoneNumber', 'text', 'serviceCode', 'networkCode', 'x'),
          fc.string({ maxLength: 40 }),
        ),
        async (fields) => {
          const res = await postForm(product.url, TOKEN_PATH, fields);
          expect(res.status === 200 || (res.status >= 400 && res.status < 500)).toBe(true);
          if (res.status !== 200) expect(JSON.parse(res.text).error).toEqual(expect.any(String));
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('what only the embedded sandbox serves', () => {
  it('has no simulator page, no channel preview and no sandbox controls', async () => {
    expect((await fetch(`${product.url}/simulator`)).status).toBe(404);
    expect((await fetch(`${product.url}/simulator/sms?phone=%2B256772123456`)).status).toBe(404);
    expect((await fetch(`${product.url}/preview`)).status).toBe(404);
    const preview = await fetch(`${product.url}/preview/turn`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        cookie: `momo_preview=${'a'.repeat(32)}`,
        'x-csrf-token': 'a'.repeat(32),
      },
      body: JSON.stringify({ phone: TELLER, action: { kind: 'dial' } }),
    });
    expect(preview.status).toBe(404);
    const controls = await fetch(`${product.url}/sandbox/collections`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Token sandbox-key' },
      body: JSON.stringify({ phonenumber: TELLER, amount: '1000', currency: 'UGX' }),
    });
    expect(controls.status).toBe(404);
    expect(
      (await fetch(`${product.url}/api/payments`, { headers: { authorization: 'Token sandbox-key' } })).status,
    ).toBe(404);
  });
});

describe('production without a token or an allow-list', () => {
  it('serves no USSD route and says why at start', async () => {
    const bare = await startProductionProduct({ USSD_CALLBACK_TOKEN: undefined });
    try {
      expect((await postForm(bare.url, '/ussd/africastalking', at(TELLER, ''))).status).toBe(404);
      expect(bare.logs.join('')).toMatch(/USSD routes are not served: set USSD_CALLBACK_TOKEN[^"]*or USSD_ALLOWED_IPS/);
    } finally {
      await bare.stop();
    }
  });
});

describe('USSD_ALLOWED_IPS and TRUST_PROXY', () => {
  it('refuses a caller outside the list, whatever X-Forwarded-For it writes', async () => {
    const listed = await startProductionProduct({
      USSD_CALLBACK_TOKEN: undefined,
      USSD_ALLOWED_IPS: '196.201.214.0/23, 2c0f:fe38::/32',
    });
    try {
      const refused = await postForm(listed.url, '/ussd/africastalking', at(TELLER, ''));
      expect(refused.status).toBe(403);
      expect(JSON.parse(refused.text).detail).toMatch(/USSD_ALLOWED_IPS/);
      // Before, every X-Forwarded-For was believed: a caller could claim the gateway's address.
      const spoofed = await postForm(listed.url, '/ussd/africastalking', at(TELLER, ''), {
        'x-forwarded-for': '196.201.214.10',
      });
      expect(spoofed.status).toBe(403);
      expect(await listed.app.store.get(keys.conversation({ channel: 'ussd', conversationId: TELLER }))).toBeNull();
    } finally {
      await listed.stop();
    }
  });

  it('serves a listed caller: by its socket address, or through the proxy hops TRUST_PROXY names', async () => {
    const direct = await startProductionProduct({ USSD_CALLBACK_TOKEN: undefined, USSD_ALLOWED_IPS: '127.0.0.0/8' });
    try {
      expect((await postForm(direct.url, '/ussd/africastalking', at(TELLER, ''))).text).toMatch(/^CON /);
    } finally {
      await direct.stop();
    }
    const proxied = await startProductionProduct({
      USSD_CALLBACK_TOKEN: undefined,
      USSD_ALLOWED_IPS: '196.201.214.0/23',
      TRUST_PROXY: '1',
    });
    try {
      // One hop (this test, as the balancer) forwards for the gateway.
      expect(
        (await postForm(proxied.url, '/ussd/africastalking', at(TELLER, ''), { 'x-forwarded-for': '196.201.214.10' }))
          .text,
      ).toMatch(/^CON /);
      // A caller writing its own X-Forwarded-For before the balancer's: only the hop the balancer added counts.
      const spoofed = await postForm(proxied.url, '/ussd/africastalking', at(TELLER, ''), {
        'x-forwarded-for': '196.201.214.10, 203.0.113.9',
      });
      expect(spoofed.status).toBe(403);
    } finally {
      await proxied.stop();
    }
  });

  it('with both, a listed caller still needs the token', async () => {
    const both = await startProductionProduct({ USSD_ALLOWED_IPS: '127.0.0.1, ::1' });
    try {
      expect((await postForm(both.url, '/ussd/africastalking', at(TELLER, ''))).status).toBe(404);
      expect((await postForm(both.url, TOKEN_PATH, at(TELLER, ''))).text).toMatch(/^CON /);
    } finally {
      await both.stop();
    }
  });
});

describe('the per-source limit', () => {
  it('answers 429 with Retry-After and a reason past the limit, on the USSD and the notification routes', async () => {
    const limited = await startProductionProduct({
      SOURCE_RATE_LIMIT_REQUESTS: '5',
      SOURCE_RATE_LIMIT_WINDOW_SECONDS: '60',
    });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++)
        statuses.push((await postForm(limited.url, '/ussd/africastalking', at(TELLER, ''))).status);
      expect(statuses).toEqual([404, 404, 404, 404, 404]);
      // The budget is the address's, whatever route or token: a forger guessing tokens is stopped too.
      const over = await fetch(`${limited.url}${TOKEN_PATH}`, {
        method: 'POST',
        body: new URLSearchParams(at(TELLER, '')),
      });
      expect(over.status).toBe(429);
      expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(((await over.json()) as { detail: string }).detail).toMatch(/Too many requests from this address/);
      const notification = await fetch(`${limited.url}/notifications/momo`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      expect(notification.status).toBe(429);
      // Routes it does not guard go on.
      expect((await fetch(`${limited.url}/healthz`)).status).toBe(200);
      expect(limited.logs.join('')).toMatch(/source limit: too many requests from one address/);
      expect(limited.logs.join('')).not.toContain(CALLBACK_TOKEN);
    } finally {
      await limited.stop();
    }
  });
});
