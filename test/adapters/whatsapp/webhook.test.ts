/**
 * The webhook over real HTTP: Meta's verification (right and wrong verify token), who may post (missing,
 * malformed, forged and tampered signatures are refused with 401 and reach nothing), what a signed delivery
 * does (200 at once; messages worked in order through the engine; a redelivery ignored; statuses counted,
 * not answered; other kinds answered politely) and what the user sees (buttons, pages turned without the
 * engine, expired taps).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../../src/store/memory-store.js';
import type { Prompt } from '../../../src/conversation/types.js';
import {
  APP_SECRET,
  VERIFY_TOKEN,
  delivery,
  listReply,
  optionsOf,
  post,
  signature,
  textMessage,
  wordsOf,
  WhatsAppUser,
} from './deliveries.js';
import { ScriptedEngine, startHarness, type Harness } from './harness.js';
import { graphError } from './fake-graph-api.js';

const USER = '256772400001';
let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const menu: Prompt = {
  text: 'Main menu',
  choices: [
    { id: 'pay', label: 'Pay someone' },
    { id: 'request', label: 'Request money' },
  ],
  final: false,
};
const echo = () =>
  new ScriptedEngine((inbound) =>
    inbound.nav === 'home' || inbound.text === 'hi'
      ? menu
      : { text: `You said ${inbound.choice ?? inbound.text}`, final: false },
  );

async function verify(url: string, query: Record<string, string>) {
  const res = await fetch(`${url}/whatsapp/webhook?${new URLSearchParams(query)}`);
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}

describe("GET /whatsapp/webhook (Meta's verification)", () => {
  it('answers the challenge as plain text for subscribe with the right verify token', async () => {
    harness = await startHarness(echo());
    const answer = await verify(harness.url, {
      'hub.mode': 'subscribe',
      'hub.verify_token': VERIFY_TOKEN,
      'hub.challenge': '1158201444',
    });
    expect(answer).toEqual({ status: 200, type: expect.stringMatching(/^text\/plain/), text: '1158201444' });
  });

  it('refuses a wrong or missing verify token, or another mode, with 403 and echoes nothing', async () => {
    harness = await startHarness(echo());
    const queries: Array<Record<string, string>> = [
      { 'hub.mode': 'subscribe', 'hub.verify_token': `${VERIFY_TOKEN}x`, 'hub.challenge': '42' },
      { 'hub.mode': 'subscribe', 'hub.verify_token': VERIFY_TOKEN.slice(0, -1), 'hub.challenge': '42' },
      { 'hub.mode': 'subscribe', 'hub.verify_token': '', 'hub.challenge': '42' },
      { 'hub.mode': 'subscribe', 'hub.challenge': '42' },
      { 'hub.mode': 'unsubscribe', 'hub.verify_token': VERIFY_TOKEN, 'hub.challenge': '42' },
      {},
    ];
    for (const query of queries) {
      const answer = await verify(harness.url, query);
      expect(answer.status).toBe(403);
      expect(answer.text).toMatch(/Verification refused/);
      expect(answer.text).not.toContain('42');
    }
    expect((await verify(harness.url, { 'hub.mode': 'subscribe', 'hub.verify_token': VERIFY_TOKEN })).status).toBe(400);
  });
});

describe('POST /whatsapp/webhook: who may post', () => {
  it('refuses a missing, malformed, forged or tampered signature with 401, and nothing reaches the engine', async () => {
    const engine = echo();
    harness = await startHarness(engine);
    const body = JSON.stringify(delivery([textMessage(USER, 'hi')]));
    const forged = [
      null,
      '',
      'sha256=',
      'sha1=' + signature(body).slice(7, 47),
      signature(body).toUpperCase().replace('SHA256', 'sha512'),
      signature(body, `${APP_SECRET}x`),
      signature(body).slice(0, -1) + (signature(body).endsWith('0') ? '1' : '0'),
      signature(body.replace(USER, '256772400002')),
      `${signature(body)}, ${signature(body)}`,
    ];
    for (const header of forged) {
      const answer = await post(harness.url, body, header);
      expect(answer.status).toBe(401);
      expect(JSON.parse(answer.text).error).toMatch(/X-Hub-Signature-256/);
    }
    // A wrongly signed body that cannot even be read is refused the same way.
    expect((await post(harness.url, 'x'.repeat(4 * 1024 * 1024), signature('other'))).status).toBe(401);
    await harness.whatsapp.idle();
    expect(engine.inbounds).toEqual([]);
    expect(harness.graph.sent).toEqual([]);
    // Upper-case hex digits are the same signature; the same body signed right is served.
    expect(
      (
        await post(
          harness.url,
          body,
          signature(body).replace(/[a-f]/g, (c) => c.toUpperCase()),
        )
      ).status,
    ).toBe(200);
    await harness.whatsapp.idle();
    expect(engine.inbounds).toHaveLength(1);
  });

  it('refuses a signed body that is not a messages webhook with 400, and answers a signed delivery 200', async () => {
    harness = await startHarness(echo());
    for (const body of ['not json', '{"object":"page","entry":[]}', '[]', '']) {
      const answer = await post(harness.url, body);
      expect(answer.status).toBe(400);
      expect(answer.text.length).toBeGreaterThan(0);
    }
    expect(await post(harness.url, delivery())).toEqual({ status: 200, text: '{"received":0}' });
  });
});

describe('POST /whatsapp/webhook: a signed delivery', () => {
  it("answers 200 before the engine has answered, then sends the engine's prompt as buttons", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const engine = new ScriptedEngine(async () => {
      await held;
      return menu;
    });
    harness = await startHarness(engine);
    expect((await post(harness.url, delivery([textMessage(USER, 'hi', 'wamid.FIRST')]))).status).toBe(200);
    expect(harness.graph.sent).toEqual([]);
    release();
    const [shown] = await harness.graph.waitFor(USER, 1);
    expect(shown!.interactive.type).toBe('button');
    expect(optionsOf(shown!).map((o) => o.title)).toEqual(['Pay someone', 'Request money']);
    expect(engine.inbounds).toEqual([
      {
        channel: 'whatsapp',
        conversationId: USER,
        userId: USER,
        messageId: 'wamid.FIRST',
        phoneNumber: `+${USER}`,
        text: 'hi',
      },
    ]);
  });

  it('answers a redelivered message nothing, and the engine never sees it twice', async () => {
    const engine = echo();
    harness = await startHarness(engine);
    const user = new WhatsAppUser(harness.url, harness.graph, USER);
    await user.say('hi');
    await user.tap('Pay someone');
    for (let i = 0; i < 3; i++) expect((await user.redeliver()).status).toBe(200);
    // The same message in two deliveries at once.
    const again = textMessage(USER, 'again', 'wamid.TWICE');
    await Promise.all([post(harness.url, delivery([again])), post(harness.url, delivery([again]))]);
    await harness.whatsapp.idle();
    expect(engine.inbounds.map((i) => i.messageId)).toEqual([...new Set(engine.inbounds.map((i) => i.messageId))]);
    expect(engine.inbounds).toHaveLength(3);
    expect(user.received.map(wordsOf)).toEqual(['Main menu', 'You said pay', 'You said again']);
  });

  it("works one user's messages in the order they came, each answered before the next is read", async () => {
    // 'one' is answered only once the whole delivery is in (the webhook answers it before working it): a
    // worker that read 'two' before answering 'one' would answer it first.
    let accepted!: Promise<unknown>;
    const engine = new ScriptedEngine(async (inbound) => {
      if (inbound.text === 'one') await accepted;
      return { text: `got ${inbound.text}`, final: false };
    });
    harness = await startHarness(engine);
    accepted = post(harness.url, delivery(['one', 'two', 'three'].map((text) => textMessage(USER, text))));
    await accepted;
    const sent = await harness.graph.waitFor(USER, 3);
    expect(sent.map(wordsOf)).toEqual(['got one', 'got two', 'got three']);
  });

  it('counts status callbacks and answers none of them; a failed one is logged with the number masked', async () => {
    harness = await startHarness(echo());
    const statuses = [
      { id: 'wamid.1', status: 'sent', timestamp: '1700000000', recipient_id: USER },
      { id: 'wamid.1', status: 'delivered', timestamp: '1700000001', recipient_id: USER },
      { id: 'wamid.1', status: 'read', timestamp: '1700000002', recipient_id: USER },
      {
        id: 'wamid.2',
        status: 'failed',
        timestamp: '1700000003',
        recipient_id: USER,
        errors: [{ code: 131026, title: 'Message undeliverable' }],
      },
      { id: 'wamid.3', status: 'something_new', timestamp: '1700000004', recipient_id: USER },
    ];
    expect((await post(harness.url, delivery([], statuses))).status).toBe(200);
    expect(harness.counted).toEqual([
      'status sent',
      'status delivered',
      'status read',
      'status failed',
      'status other',
    ]);
    expect(harness.graph.sent).toEqual([]);
    const line = harness.logs.find((l) => l.includes('was not delivered'))!;
    expect(JSON.parse(line)).toMatchObject({ to: '25677****001', code: 131026 });
    expect(harness.logs.join('\n')).not.toContain(USER);
  });

  it('answers an image, a location or a voice note politely, without the engine; a reaction gets nothing', async () => {
    const engine = echo();
    harness = await startHarness(engine);
    const base = { from: USER, timestamp: String(Math.floor(Date.now() / 1000)) };
    await post(
      harness.url,
      delivery([
        { ...base, id: 'wamid.I', type: 'image', image: { id: 'media1', mime_type: 'image/jpeg', sha256: 'x' } },
        { ...base, id: 'wamid.R', type: 'reaction', reaction: { message_id: 'wamid.I', emoji: '👍' } },
        { ...base, id: 'wamid.L', type: 'location', location: { latitude: 0.3, longitude: 32.5 } },
        { ...base, id: 'wamid.A', type: 'audio', audio: { id: 'media2', voice: true } },
      ]),
    );
    const sent = await harness.graph.waitFor(USER, 3);
    await harness.whatsapp.idle();
    expect(sent.map(wordsOf).every((w) => /can only read text and the buttons/.test(w))).toBe(true);
    expect(harness.graph.to(USER)).toHaveLength(3);
    expect(engine.inbounds).toEqual([]);
  });

  it('turns the page of a long list without the engine, and takes a row of any page shown', async () => {
    const bundles = Array.from({ length: 12 }, (_, i) => ({ id: `b${i}`, label: `Bundle ${i + 1}` }));
    const engine = new ScriptedEngine((inbound) =>
      inbound.choice
        ? { text: `Bought ${inbound.choice}`, final: true }
        : { text: 'Choose a bundle:', choices: bundles, final: false },
    );
    harness = await startHarness(engine);
    const user = new WhatsAppUser(harness.url, harness.graph, USER);
    const first = await user.say('data');
    expect(optionsOf(first).map((o) => o.title)).toEqual([...bundles.slice(0, 8).map((b) => b.label), 'More options']);
    const second = await user.tap('More options');
    expect(optionsOf(second).map((o) => o.title)).toEqual([
      ...bundles.slice(8).map((b) => b.label),
      'Previous options',
    ]);
    expect(engine.inbounds).toHaveLength(1);
    // A row of the first page, tapped after the second was shown, is still this prompt's choice.
    await user.send(listReply(USER, 'c:b2', 'Bundle 3', first.wamid));
    expect(engine.inbounds.at(-1)).toMatchObject({ choice: 'b2' });
    // That prompt has gone: a tap on its list now is expired, and the engine does not hear of it.
    const expired = await user.send(listReply(USER, 'c:b9', 'Bundle 10', second.wamid));
    expect(wordsOf(expired)).toMatch(/expired/);
    expect(engine.inbounds).toHaveLength(2);
  });

  it('sends a reply Meta first answers 429 once, after its Retry-After: the user gets it once', async () => {
    harness = await startHarness(echo());
    harness.graph.failNext(429, graphError(130429, '(#130429) Rate limit hit'), { headers: { 'retry-after': '1' } });
    const user = new WhatsAppUser(harness.url, harness.graph, USER);
    expect(wordsOf(await user.say('hi'))).toBe('Main menu');
    expect(harness.sleeps).toEqual([1000]);
    expect(harness.graph.refused.map((r) => r.status)).toEqual([429]);
    await harness.whatsapp.idle();
    expect(user.received).toHaveLength(1);
  });

  it('shows a late answer with its buttons, and a tap on them is read against it', async () => {
    const engine = new ScriptedEngine((inbound) =>
      inbound.choice
        ? { text: `Chose ${inbound.choice}`, final: false }
        : { text: 'We are still working on it.', final: false },
    );
    harness = await startHarness(engine);
    const user = new WhatsAppUser(harness.url, harness.graph, USER);
    await user.say('/data');
    await harness.whatsapp.showLate(
      { channel: 'whatsapp', conversationId: USER },
      {
        text: 'Choose the network:',
        choices: [
          { id: 'mtn', label: 'MTN' },
          { id: 'glo', label: 'Glo' },
        ],
        final: false,
      },
    );
    expect(optionsOf(user.screen).map((o) => o.title)).toEqual(['MTN', 'Glo']);
    expect(wordsOf(await user.tap('Glo'))).toBe('Chose glo');
  });

  it('tells the user to send again when the store fails before the engine saw the message, and never after', async () => {
    const store = new MemoryStore();
    let failClaims = true;
    const flaky = Object.assign(Object.create(store) as MemoryStore, {
      claim: (key: string, ttl: number) =>
        failClaims ? Promise.reject(new Error('redis is down')) : store.claim(key, ttl),
    });
    const engine = echo();
    harness = await startHarness(engine, { store: flaky });
    const user = new WhatsAppUser(harness.url, harness.graph, USER);
    expect(wordsOf(await user.say('hi'))).toMatch(/could not read your message just now\. Please send it again/);
    expect(engine.inbounds).toEqual([]);
    failClaims = false;
    expect(wordsOf(await user.say('hi'))).toBe('Main menu');
  });

  it('reads only messages for its own phone number', async () => {
    const engine = echo();
    harness = await startHarness(engine);
    expect((await post(harness.url, delivery([textMessage(USER, 'hi')], [], '111111111'))).status).toBe(200);
    await harness.whatsapp.idle();
    expect(engine.inbounds).toEqual([]);
    expect(harness.graph.sent).toEqual([]);
  });

  it('marks messages read when read receipts are on', async () => {
    harness = await startHarness(echo(), { whatsapp: { readReceipts: true } });
    await post(harness.url, delivery([textMessage(USER, 'hi', 'wamid.READ')]));
    await harness.graph.waitFor(USER, 1);
    await harness.whatsapp.idle();
    expect(harness.graph.sent.filter((m) => m.status === 'read')).toEqual([
      { messaging_product: 'whatsapp', status: 'read', message_id: 'wamid.READ', wamid: expect.any(String) },
    ]);
  });
});
