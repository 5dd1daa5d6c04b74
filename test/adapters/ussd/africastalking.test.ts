import { afterEach, describe, expect, it } from 'vitest';
import express from 'express';
import { addUssdRoutes } from '../../../adapters/ussd/index.js';
import { DirectRoutes } from '../../../src/http/direct-routes.js';
import { maskPhone } from '../../../src/log.js';
import { MemoryStore } from '../../../src/store/memory-store.js';
import { RedisStore } from '../../../src/store/redis-store.js';
import { BUNDLES, PHONE, PIN, captureLogger, listen, postAt, startUssd, withTurns } from './helpers.js';
import { REDIS_URL } from '../../conversation/redis-helper.js';
import { keys } from '../../../src/store/keys.js';

type Started = Awaited<ReturnType<typeof startUssd>>;
let app: Started | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

/** One Africa's Talking session: each call sends every answer so far joined by `*`. */
function session(url: string, sessionId: string, phoneNumber = '256772123456') {
  return (text: string) =>
    postAt(url, { sessionId, serviceCode: '*384*123#', phoneNumber, networkCode: '63902', text });
}

describe("Africa's Talking over HTTP", () => {
  it('dials, pays with a PIN and ends; the engine sees normalised Inbounds', async () => {
    app = await startUssd();
    const hop = session(app.url, 'AT-1');
    const menu = await hop('');
    expect(menu.status).toBe(200);
    expect(menu.type).toContain('text/plain');
    expect(menu.body).toBe('CON Welcome to MoMo\n1. Pay someone\n2. Leave a note\n3. Buy data\n0 Back 00 Home');
    expect((await hop('1')).body).toBe('CON Enter amount\n0 Back 00 Home');
    expect((await hop('1*5000')).body).toBe('CON Pay 5000 UGX. Enter PIN\n0 Back 00 Home');
    const done = await hop(`1*5000*${PIN}`);
    expect(done.body).toBe('END Paid 5000 UGX. Thank you.');
    expect(app.payments).toEqual([{ phone: PHONE, amount: '5000' }]);
    expect(app.inbounds.map((i) => [i.messageId, i.newSession, i.choice, i.text])).toEqual([
      ['AT-1:0', true, undefined, undefined],
      ['AT-1:1', undefined, 'pay', undefined],
      ['AT-1:2', undefined, undefined, '5000'],
      ['AT-1:3', undefined, undefined, PIN],
    ]);
    for (const i of app.inbounds) {
      expect(i).toMatchObject({ channel: 'ussd', conversationId: PHONE, userId: PHONE, phoneNumber: PHONE });
    }
  });

  it('answers a resent request with the same screen and no second effect', async () => {
    app = await startUssd();
    const hop = session(app.url, 'AT-2');
    await hop('');
    await hop('1');
    await hop('1*7000');
    const first = await hop(`1*7000*${PIN}`);
    const again = await hop(`1*7000*${PIN}`);
    expect(again.body).toBe(first.body);
    expect(app.payments).toHaveLength(1);
    // A resend of the middle of the session (stale) changes nothing either.
    const stale = await hop('1*7000');
    expect(stale.body).toBe(first.body);
    expect(app.payments).toHaveLength(1);
    expect(app.inbounds).toHaveLength(4);
  });

  it('resends of a waiting screen give the same screen without calling the engine', async () => {
    app = await startUssd();
    const hop = session(app.url, 'AT-3');
    await hop('');
    const once = await hop('2');
    const twice = await hop('2');
    expect(twice.body).toBe(once.body);
    expect(app.inbounds).toHaveLength(2);
  });

  it('keeps an answer that contains * whole', async () => {
    app = await startUssd();
    const hop = session(app.url, 'AT-4');
    await hop('');
    await hop('2');
    const saved = await hop('2*call *123# now');
    expect(saved.body).toBe('END Note saved: call *123# now');
    expect(app.inbounds.at(-1)?.text).toBe('call *123# now');
  });

  it('pages a long list with 98 and 0 without calling the engine, and picks by the shown number', async () => {
    app = await startUssd();
    const hop = session(app.url, 'AT-5');
    await hop('');
    const page1 = await hop('3');
    expect(page1.body).toContain('1. Bundle 1');
    expect(page1.body).toContain('98 More');
    const calls = app.inbounds.length;
    const page2 = await hop('3*98');
    expect(page2.body).not.toContain('1. Bundle 1:');
    const firstOnPage2 = Number(/^(\d+)\. /m.exec(page2.body.slice(4))?.[1]);
    expect(firstOnPage2).toBeGreaterThan(1);
    const back = await hop('3*98*0');
    expect(back.body).toBe(page1.body);
    await hop('3*98*0*98');
    expect(app.inbounds).toHaveLength(calls);
    const chosen = await hop(`3*98*0*98*${firstOnPage2}`);
    expect(chosen.body).toBe(`END You chose ${BUNDLES[firstOnPage2 - 1]?.id}`);
    expect(app.inbounds.at(-1)?.choice).toBe(BUNDLES[firstOnPage2 - 1]?.id);
    for (const body of [page1.body, page2.body]) expect(body.length - 4).toBeLessThanOrEqual(182);
  });

  it('sends 0 on a first page as back and 00 as home to the engine', async () => {
    app = await startUssd();
    const hop = session(app.url, 'AT-6');
    await hop('');
    await hop('1');
    await hop('1*100');
    expect((await hop('1*100*0')).body).toBe('CON Enter amount\n0 Back 00 Home');
    expect(app.inbounds.at(-1)?.nav).toBe('back');
    expect((await hop('1*100*0*00')).body).toMatch(/^CON Welcome to MoMo/);
    expect(app.inbounds.at(-1)?.nav).toBe('home');
  });

  it('reads a + the gateway left unencoded in the form (it arrives as a space)', async () => {
    app = await startUssd();
    const res = await fetch(`${app.url}/ussd/africastalking`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'sessionId=AT-PLUS&serviceCode=*384*123%23&phoneNumber=+256772123456&text=',
    });
    expect(res.status).toBe(200);
    expect(app.inbounds.at(-1)?.phoneNumber).toBe(PHONE);
  });

  it('a new sessionId starts a new USSD session for the same phone', async () => {
    // Resuming off (USSD_RESUME_SECONDS=0): a redial is a plain new session.
    app = await startUssd({ resumeSeconds: 0 });
    await session(app.url, 'AT-7')('');
    await session(app.url, 'AT-7')('1');
    const fresh = await session(app.url, 'AT-8')('');
    expect(fresh.body).toMatch(/^CON Welcome/);
    expect(app.inbounds.at(-1)).toMatchObject({ messageId: 'AT-8:0', newSession: true });
  });

  it('refuses malformed requests with 400 and a reason', async () => {
    app = await startUssd();
    const missing = await postAt(app.url, { serviceCode: '*384*123#', phoneNumber: '256772123456', text: '' });
    expect(missing.status).toBe(400);
    expect(JSON.parse(missing.body).error).toMatch(/sessionId/);
    const badPhone = await postAt(app.url, { sessionId: 'x', phoneNumber: 'not-a-phone', text: '' });
    expect(badPhone.status).toBe(400);
    expect(JSON.parse(badPhone.body).error).toMatch(/phone number/);
    const noBody = await fetch(`${app.url}/ussd/africastalking`, { method: 'POST' });
    expect(noBody.status).toBe(400);
    const unknown = await fetch(`${app.url}/ussd/telco`, { method: 'POST' });
    expect(unknown.status).toBe(404);
    expect((await unknown.json()).error).toMatch(/unknown USSD gateway; served: africastalking, hubtel/);
    expect(app.inbounds).toHaveLength(0);
  });

  it('answers END with an apology when the engine throws, and logs no answer', async () => {
    const { logger, lines } = captureLogger();
    const server = express();
    const direct = new DirectRoutes();
    addUssdRoutes(server, direct, {
      engine: withTurns({ handle: async () => Promise.reject(new RangeError(`bad pin ${PIN}`)) }, new MemoryStore()),
      serviceCode: '*1#',
      deadlineMs: 1000,
      logger,
      access: { open: true },
      digestKey: 'test-digest-key',
    });
    const served = await listen(direct.serve(server));
    try {
      const reply = await postAt(served.url, { sessionId: 'E1', phoneNumber: '256772123456', text: '' });
      expect(reply.status).toBe(200);
      expect(reply.body).toMatch(/^END Sorry/);
      expect(lines.join('\n')).toContain('RangeError');
      expect(lines.join('\n')).not.toContain(PIN);
    } finally {
      await served.close();
    }
  });

  it('answers END when the engine takes far past the deadline, and so does a resend; the engine is told which delivery', async () => {
    const releases: (() => void)[] = [];
    const toldLate: Array<[string, string]> = [];
    const slow = {
      handle: () => new Promise<never>((_, reject) => void releases.push(() => reject(new Error('late')))),
      // "Dial again shortly to see the result": the next dial must say what became of this delivery.
      toldLate: async (participant: { conversationId: string }, messageId: string) =>
        void toldLate.push([participant.conversationId, messageId]),
    };
    app = await startUssd({ engine: slow, deadlineMs: 20 });
    const reply = await session(app.url, 'SLOW')('');
    expect(reply.body).toMatch(/^END Sorry, this is taking longer/);
    expect((await session(app.url, 'SLOW')('')).body).toBe(reply.body);
    expect(toldLate).toEqual([
      [PHONE, 'SLOW:0'],
      [PHONE, 'SLOW:0'],
    ]);
    for (const release of releases) release();
  });

  it('never logs the text field, a PIN or a full phone number', async () => {
    app = await startUssd();
    const hop = session(app.url, 'AT-LOG');
    await hop('');
    await hop('1');
    await hop('1*999');
    await hop(`1*999*${PIN}`);
    await hop(`1*999*${PIN}`);
    await postAt(app.url, { sessionId: 'AT-LOG2', phoneNumber: 'nonsense', text: `1*${PIN}` });
    const log = app.logs.join('\n');
    expect(app.logs.length).toBeGreaterThanOrEqual(6);
    expect(log).not.toContain(PIN);
    expect(log).not.toContain('772123456');
    expect(log).toContain(`"phone":"${maskPhone(PHONE)}"`);
    for (const line of app.logs) {
      const entry = JSON.parse(line) as Record<string, unknown>;
      expect(entry).not.toHaveProperty('text');
      expect(entry).not.toHaveProperty('body');
    }
    expect(app.logs.map((l) => JSON.parse(l).hop).filter((h) => h !== undefined)).toEqual([0, 1, 2, 3, 3]);
  });

  it('keeps the USSD state free of the cumulative text (it carries the PIN)', async () => {
    app = await startUssd();
    const hop = session(app.url, 'AT-STORE');
    await hop('');
    await hop('1');
    await hop('1*12345');
    await hop(`1*12345*${PIN}`);
    const stored = await app.store.get(keys.conversation({ channel: 'ussd', conversationId: PHONE }));
    expect(stored?.snapshot).toMatchObject({
      channel: { gateway: 'africastalking', sessionId: 'AT-STORE', hop: 3, seenLength: `1*12345*${PIN}`.length },
    });
    expect(JSON.stringify(stored)).not.toContain(PIN);
  });
});

describe('with the Redis store', () => {
  it('answers concurrent duplicate deliveries with one screen and one effect', async () => {
    const prefix = `test:ussd:${process.pid}:${Date.now()}:`;
    const store = new RedisStore({ url: REDIS_URL, keyPrefix: prefix });
    app = await startUssd({ store });
    try {
      const hop = session(app.url, 'AT-REDIS');
      await hop('');
      await hop('1');
      await hop('1*2500');
      const replies = await Promise.all([hop(`1*2500*${PIN}`), hop(`1*2500*${PIN}`), hop(`1*2500*${PIN}`)]);
      expect(new Set(replies.map((r) => r.body))).toEqual(new Set(['END Paid 2500 UGX. Thank you.']));
      expect(app.payments).toHaveLength(1);
      expect((await store.get(keys.conversation({ channel: 'ussd', conversationId: PHONE })))?.snapshot).toMatchObject({
        channel: { sessionId: 'AT-REDIS', hop: 3 },
      });
    } finally {
      await store.delete(keys.conversation({ channel: 'ussd', conversationId: PHONE }));
      await store.close();
    }
  });
});

describe('body parsers stay on the USSD routes', () => {
  it('leaves other routes of the same app with an unread body', async () => {
    const server = express();
    const direct = new DirectRoutes();
    const { logger } = captureLogger();
    addUssdRoutes(server, direct, {
      engine: withTurns({ handle: async () => ({ text: 'x', final: true }) }, new MemoryStore()),
      serviceCode: '*1#',
      deadlineMs: 100,
      logger,
      access: { open: true },
      digestKey: 'test-digest-key',
    });
    server.post('/slack/events', (req, res) => {
      let raw = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (raw += c));
      req.on('end', () => res.json({ parsed: req.body !== undefined, raw }));
    });
    const served = await listen(direct.serve(server));
    try {
      const res = await fetch(`${served.url}/slack/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"a":1}',
      });
      expect(await res.json()).toEqual({ parsed: false, raw: '{"a":1}' });
    } finally {
      await served.close();
    }
  });
});
