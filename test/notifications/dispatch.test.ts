import express from 'express';
import { createServer } from 'node:http';
import { DirectRoutes } from '../../src/http/direct-routes.js';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { MadeRecords, type Made } from '../../src/conversation/calls/made-records.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import type { Address, NoteWords, Notifier } from '../../src/conversation/types.js';
import { BusyError, createDispatcher, type DispatcherOptions } from '../../src/notifications/dispatch.js';
import { createNotifications, notificationQueueName } from '../../src/notifications/index.js';
import { notificationBody, parseNotice, type Notice, type NoticeKind } from '../../src/notifications/events.js';
import { MemoryMarks, RedisMarks, type NotificationMarks } from '../../src/notifications/marks.js';
import type { ServiceReads } from '../../src/notifications/reads.js';
import { MomoClient } from '../../src/momo/index.js';
import { createLogger } from '../../src/log.js';
import { gate } from '../conversation/engine-fixtures.js';
import { REDIS_URL, cleanupQueues, inspector, uniquePrefix } from '../conversation/redis-helper.js';
import { until } from '../until.js';

const logger = createLogger('silent');
const prefix = uniquePrefix('dispatch');
const redisMarks: RedisMarks[] = [];
afterAll(async () => {
  await Promise.all(redisMarks.map((m) => m.close()));
  await inspector(prefix).cleanup();
});

class RecordingNotifier implements Notifier {
  readonly sent: Array<{ address: Address; text: string }> = [];
  /** The message key and values each send carried (NoteWords), in order. */
  readonly words: Array<NoteWords | undefined> = [];
  failuresLeft = 0;
  async send(address: Address, text: string, words?: NoteWords): Promise<void> {
    this.words.push(words);
    if (this.failuresLeft > 0) {
      this.failuresLeft--;
      throw new Error('chat api 502');
    }
    this.sent.push({ address, text });
  }
}

/** A notifier whose sends wait until `open()`; `entered` resolves when the first send began. */
class GatedNotifier extends RecordingNotifier {
  private readonly began = gate<void>();
  private readonly opened = gate<void>();
  readonly entered = this.began.promise;
  open(): void {
    this.opened.open();
  }
  override async send(address: Address, text: string): Promise<void> {
    this.began.open();
    await this.opened.promise;
    await super.send(address, text);
  }
}

/**
 * `marks` whose first answer (to whichever call comes first) is held back from its caller until `deliver()`:
 * the caller looked at the marks at one moment and acts on that look later. `answered` resolves once the
 * marks gave that first answer.
 */
function answeringLate(marks: NotificationMarks): {
  marks: NotificationMarks;
  answered: Promise<void>;
  deliver(): void;
} {
  const answered = gate<void>();
  const delivered = gate<void>();
  let first = true;
  const wrapped = new Proxy(marks, {
    get(target, name, receiver) {
      const value: unknown = Reflect.get(target, name, receiver);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        const answer: unknown = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        if (!first) return answer;
        first = false;
        answered.open();
        await delivered.promise;
        return answer;
      };
    },
  });
  return { marks: wrapped, answered: answered.promise, deliver: () => delivered.open() };
}

/** A log that keeps every line, to find what the dispatcher said. */
function capturingLogger() {
  const lines: Array<Record<string, unknown>> = [];
  return {
    lines,
    logger: createLogger('info', {
      write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>),
    }),
  };
}

let paymentId = 1000;
const paymentEvent = (id: number, state: string, extra: Record<string, unknown> = {}): Notice => {
  const parsed = parseNotice(
    notificationBody.parse({
      hook: { id: 1, event: 'payment.status.changed', target: 'https://bot.test/notifications/momo' },
      data: {
        id,
        state,
        amount: '2500',
        currency: 'UGX',
        metadata: { chat: 'telegram:55', ref: `ref-${id}` },
        phone_nos: [{ phonenumber: '+256772000001' }],
        last_error: state === 'processed_with_errors' ? 'Recipient wallet full' : null,
        ...extra,
      },
    }),
  );
  if (!parsed.ok || !parsed.notice) throw new Error('unreadable test notification');
  return parsed.notice;
};

/** Our record of payment `id`, made in `chat`, as the flows' services write it around the create. */
async function ourPayment(made: MadeRecords, id: number, chat = 'telegram:55', amount = '2500'): Promise<Made> {
  await made.intend({ kind: 'payment', ref: `ref-${id}`, chat, amount, currency: 'UGX', payee: '+256772000001' });
  return (await made.accepted(`ref-${id}`, String(id)))!;
}

/** The service's reads, played: what each id reads as, and how many reads were made. */
class FakeReads implements ServiceReads {
  readonly states = new Map<string, string>();
  /** Other fields an id reads with (its recipients' states). */
  readonly fields = new Map<string, Record<string, unknown>>();
  reads = 0;
  async get(kind: NoticeKind, id: string): Promise<Notice | null> {
    this.reads++;
    const state = this.states.get(id);
    return state === undefined ? null : { ...paymentEvent(Number(id), state, this.fields.get(id)), kind };
  }
  async find(): Promise<Notice | null> {
    this.reads++;
    return null;
  }
}

const marksOn: Array<[string, () => NotificationMarks]> = [
  ['memory', () => new MemoryMarks()],
  [
    'redis',
    () => {
      const m = new RedisMarks({ url: REDIS_URL, keyPrefix: prefix });
      redisMarks.push(m);
      return m;
    },
  ],
];

describe.each(marksOn)('dispatcher with %s marks', (_name, makeMarks) => {
  const setup = (extra: Partial<DispatcherOptions> = {}) => {
    const notifier = new RecordingNotifier();
    const made = new MadeRecords({ store: new MemoryStore(), logger });
    const d = createDispatcher({
      marks: makeMarks(),
      made,
      credentialsConfigured: true,
      notifiers: { telegram: notifier, ussd: notifier },
      logger,
      ...extra,
    });
    return { notifier, made, d };
  };

  it('tells each state change once although the service delivers it ten times, concurrently', async () => {
    const { notifier, made, d } = setup();
    const id = paymentId++;
    await ourPayment(made, id);
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, () => d.dispatch(paymentEvent(id, 'processed'))),
    );
    expect(results.filter((r) => r.status === 'fulfilled' && r.value === 'sent')).toHaveLength(1);
    // The others found it being told (the queue retries them) or told.
    for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(BusyError);
    expect(await d.dispatch(paymentEvent(id, 'processed'))).toBe('duplicate');
    expect(notifier.sent).toHaveLength(1);
    expect(notifier.sent[0]!.address).toEqual({ channel: 'telegram', conversationId: '55' });
    expect(notifier.sent[0]!.text).toContain('2,500 UGX');
  });

  it('never lets an older state follow a newer one', async () => {
    const { notifier, made, d } = setup();
    const id = paymentId++;
    await ourPayment(made, id);
    expect(await d.dispatch(paymentEvent(id, 'validated'))).toBe('sent');
    expect(await d.dispatch(paymentEvent(id, 'processed_with_errors'))).toBe('sent');
    expect(await d.dispatch(paymentEvent(id, 'approved'))).toBe('stale');
    expect(await d.dispatch(paymentEvent(id, 'validated'))).toBe('stale');
    expect(notifier.sent.map((m) => m.text)).toEqual([
      expect.stringContaining('passed its checks'),
      expect.stringContaining('failed: Recipient wallet full'),
    ]);
  });

  it('frees the lease when the chat API fails, so a retry tells it', async () => {
    const { notifier, made, d } = setup();
    notifier.failuresLeft = 1;
    const id = paymentId++;
    await ourPayment(made, id);
    await expect(d.dispatch(paymentEvent(id, 'processed'))).rejects.toThrow('chat api 502');
    expect(await d.dispatch(paymentEvent(id, 'processed'))).toBe('sent');
    expect(notifier.sent).toHaveLength(1);
  });

  it('a worker that died mid-send (its lease taken, never renewed nor released): the delivery is told once the lease ran out', async () => {
    const marks = makeMarks();
    const made = new MadeRecords({ store: new MemoryStore(), logger });
    const id = paymentId++;
    await ourPayment(made, id);
    // The dying worker takes the lease and is gone: its claim is never renewed, released or done.
    const gone: NotificationMarks = {
      take: async (request) => ({
        ...(await marks.take(request)),
        renew: async () => false,
        done: async () => undefined,
        release: async () => undefined,
      }),
      seen: (orderKey, dedupKey) => marks.seen(orderKey, dedupKey),
      hold: (request) => marks.hold(request),
      close: async () => undefined,
    };
    let sending = false;
    const hung: Notifier = {
      send: () => {
        sending = true;
        return new Promise<void>(() => {});
      },
    };
    const dying = createDispatcher({
      marks: gone,
      made,
      credentialsConfigured: true,
      notifiers: { telegram: hung },
      leaseMs: 200,
      logger,
    });
    void dying.dispatch(paymentEvent(id, 'processed'));
    await until('the dying dispatcher sending under its lease', () => sending);
    const notifier = new RecordingNotifier();
    const next = createDispatcher({
      marks,
      made,
      credentialsConfigured: true,
      notifiers: { telegram: notifier },
      leaseMs: 200,
      logger,
    });
    // While the lease holds, the delivery is busy (the queue comes back later), never 'duplicate': before,
    // the mark taken ahead of the send refused it for good and the outcome was never told.
    await expect(next.dispatch(paymentEvent(id, 'processed'))).rejects.toBeInstanceOf(BusyError);
    // Once the lease runs out (200 ms, never renewed), the delivery is made.
    const after = await until('the dead lease run out', () =>
      next.dispatch(paymentEvent(id, 'processed')).catch((error: unknown) => {
        if (error instanceof BusyError) return undefined;
        throw error;
      }),
    );
    expect(after).toBe('sent');
    expect(notifier.sent.map((m) => m.text)).toEqual([expect.stringMatching(/^Done/)]);
    expect(await next.dispatch(paymentEvent(id, 'processed'))).toBe('duplicate');
  });

  it('keeps only outcomes for USSD users, who read them at their next dial', async () => {
    const { notifier, made, d } = setup();
    const id = paymentId++;
    await ourPayment(made, id, 'ussd:+256700000009');
    expect(await d.dispatch(paymentEvent(id, 'validated'))).toBe('ignored');
    expect(await d.dispatch(paymentEvent(id, 'processed'))).toBe('sent');
    expect(notifier.sent.map((m) => m.address.conversationId)).toEqual(['+256700000009']);
  });

  it("tells a message in English when the language cannot be read, and in the user's language when known", async () => {
    const notifier = new RecordingNotifier();
    const made = new MadeRecords({ store: new MemoryStore(), logger });
    const common = { marks: makeMarks(), made, credentialsConfigured: true, notifiers: { telegram: notifier }, logger };
    const rejecting = createDispatcher({ ...common, languageOf: () => Promise.reject(new Error('redis down')) });
    const throwing = createDispatcher({
      ...common,
      languageOf: () => {
        throw new Error('bug');
      },
    });
    const swahili = createDispatcher({ ...common, languageOf: async () => 'sw' });
    const [a, b, c] = [paymentId++, paymentId++, paymentId++];
    for (const id of [a, b, c]) await ourPayment(made, id);
    expect(await rejecting.dispatch(paymentEvent(a, 'processed'))).toBe('sent');
    expect(await throwing.dispatch(paymentEvent(b, 'processed'))).toBe('sent');
    expect(await swahili.dispatch(paymentEvent(c, 'processed'))).toBe('sent');
    expect(notifier.sent.map((m) => m.text)).toEqual([
      expect.stringMatching(/^Done/),
      expect.stringMatching(/^Done/),
      expect.stringMatching(/^Imekamilika/),
    ]);
  });

  it('a correctly authenticated notification about a payment this product never made is told to nobody', async () => {
    const { notifier, d } = setup();
    const { lines, logger: log } = capturingLogger();
    const made = new MadeRecords({ store: new MemoryStore(), logger: log });
    const strict = createDispatcher({
      marks: makeMarks(),
      made,
      credentialsConfigured: true,
      notifiers: { telegram: notifier, ussd: notifier },
      logger: log,
    });
    const forged = paymentEvent(paymentId++, 'processed', {
      amount: '1500000',
      metadata: { chat: 'ussd:+256700000001', ref: 'someone-elses' },
    });
    expect(await strict.dispatch(forged)).toBe('unknown');
    expect(await d.dispatch(forged)).toBe('unknown');
    expect(notifier.sent).toEqual([]);
    expect(lines.some((l) => /did not make/.test(String(l.msg)))).toBe(true);
  });

  it('words and routes from our record when the body disagrees (amount, chat), and logs the disagreement', async () => {
    const notifier = new RecordingNotifier();
    const { lines, logger: log } = capturingLogger();
    const made = new MadeRecords({ store: new MemoryStore(), logger: log });
    const d = createDispatcher({
      marks: makeMarks(),
      made,
      credentialsConfigured: true,
      notifiers: { telegram: notifier, ussd: notifier },
      logger: log,
    });
    const id = paymentId++;
    await ourPayment(made, id, 'ussd:+256700000002', '2500');
    expect(
      await d.dispatch(paymentEvent(id, 'processed', { amount: '1500000', metadata: { chat: 'telegram:666' } })),
    ).toBe('sent');
    expect(notifier.sent).toEqual([
      { address: { channel: 'ussd', conversationId: '+256700000002' }, text: expect.stringContaining('2,500 UGX') },
    ]);
    expect(notifier.sent[0]!.text).not.toContain('1500000');
    // The USSD inbox gets the message's key and values too, to say it in the person's language at the dial.
    expect(notifier.words.at(-1)).toMatchObject({
      key: 'notify.payment.processed',
      from: 'notify',
      params: { amount: '2500', currency: 'UGX' },
    });
    expect(lines.find((l) => /disagrees/.test(String(l.msg)))).toMatchObject({ fields: ['amount'] });
  });

  it("finds our record by the body's ref when the create's answer (and its id) was lost, and links it", async () => {
    const { notifier, made, d } = setup();
    const id = paymentId++;
    await made.intend({
      kind: 'payment',
      ref: `ref-${id}`,
      chat: 'telegram:77',
      amount: '2500',
      currency: 'UGX',
      payee: '+256772000001',
    });
    expect(await d.dispatch(paymentEvent(id, 'processed'))).toBe('sent');
    expect(notifier.sent[0]!.address).toEqual({ channel: 'telegram', conversationId: '77' });
    expect((await made.byId('payment', String(id)))?.ref).toBe(`ref-${id}`);
    // Another id naming the same (now linked) ref is not ours.
    expect(await d.dispatch(paymentEvent(paymentId++, 'processed', { metadata: { ref: `ref-${id}` } }))).toBe(
      'unknown',
    );
  });

  it("hands on an authenticated payment's recipients' states, repeats included, before telling it", async () => {
    const reported: Array<[string, unknown]> = [];
    const { made, d } = setup({ onRecipients: async (ref, recipients) => void reported.push([ref, recipients]) });
    const id = paymentId++;
    await ourPayment(made, id);
    const body = {
      phone_nos: [
        { phonenumber: '+256772000001', state: 'complete' },
        { phonenumber: '+256772000002', state: 'queued' },
      ],
    };
    expect(await d.dispatch(paymentEvent(id, 'approved', body))).toBe('sent');
    expect(await d.dispatch(paymentEvent(id, 'approved', body))).toBe('duplicate');
    const states = [
      { phone: '+256772000001', state: 'complete', error: '' },
      { phone: '+256772000002', state: 'queued', error: '' },
    ];
    expect(reported).toEqual([
      [`ref-${id}`, states],
      [`ref-${id}`, states],
    ]);
  });

  describe('without webhook credentials', () => {
    const untrusted = (extra: Partial<DispatcherOptions> = {}) => {
      const reads = new FakeReads();
      const s = setup({ credentialsConfigured: false, reads, ...extra });
      return { ...s, reads };
    };

    it("hands on recipients' states only from the read that confirms an outcome, never from an unauthenticated body", async () => {
      const reported: Array<[string, unknown]> = [];
      const { made, d, reads } = untrusted({
        onRecipients: async (ref, recipients) => void reported.push([ref, recipients]),
      });
      const id = paymentId++;
      await ourPayment(made, id);
      const claimed = { phone_nos: [{ phonenumber: '+256772000001', state: 'complete' }] };
      expect(await d.dispatch(paymentEvent(id, 'approved', claimed))).toBe('sent');
      reads.states.set(String(id), 'approved');
      expect(await d.dispatch(paymentEvent(id, 'processed', claimed))).toBe('unconfirmed');
      expect(reported).toEqual([]);
      reads.states.set(String(id), 'processed_with_errors');
      reads.fields.set(String(id), {
        phone_nos: [{ phonenumber: '+256772000001', state: 'error', last_error: 'Wallet full' }],
      });
      expect(await d.dispatch(paymentEvent(id, 'processed', claimed))).toBe('sent');
      expect(reported).toEqual([[`ref-${id}`, [{ phone: '+256772000001', state: 'error', error: 'Wallet full' }]]]);
    });

    it('tells a final state only after one read agrees; open states need no read', async () => {
      const { notifier, made, d, reads } = untrusted();
      const id = paymentId++;
      await ourPayment(made, id);
      expect(await d.dispatch(paymentEvent(id, 'approved'))).toBe('sent');
      expect(reads.reads).toBe(0);
      reads.states.set(String(id), 'approved');
      expect(await d.dispatch(paymentEvent(id, 'processed'))).toBe('unconfirmed');
      expect(reads.reads).toBe(1);
      reads.states.set(String(id), 'processed');
      expect(await d.dispatch(paymentEvent(id, 'processed'))).toBe('sent');
      expect(reads.reads).toBe(2);
      // A repeat is refused by the marks before any read.
      expect(await d.dispatch(paymentEvent(id, 'processed'))).toBe('duplicate');
      expect(reads.reads).toBe(2);
      expect(notifier.sent.map((m) => m.text)).toEqual([
        expect.stringContaining('approved'),
        expect.stringMatching(/^Done/),
      ]);
    });

    it("a forged body pre-claiming a real payment's final state does not silence the real one", async () => {
      const { notifier, made, d, reads } = untrusted();
      const id = paymentId++;
      await ourPayment(made, id, 'telegram:55');
      // The attacker claims it failed, sending the message to their own chat, before the service is done.
      reads.states.set(String(id), 'approved');
      const forged = paymentEvent(id, 'processed_with_errors', {
        metadata: { chat: 'telegram:666', ref: `ref-${id}` },
        last_error: 'call 0700 to fix',
      });
      expect(await d.dispatch(forged)).toBe('unconfirmed');
      expect(await d.dispatch(paymentEvent(id, 'processed', { metadata: { chat: 'telegram:666' } }))).toBe(
        'unconfirmed',
      );
      expect(notifier.sent).toEqual([]);
      // The real outcome arrives: told, once, to our chat.
      reads.states.set(String(id), 'processed');
      expect(await d.dispatch(paymentEvent(id, 'processed'))).toBe('sent');
      expect(notifier.sent).toEqual([
        { address: { channel: 'telegram', conversationId: '55' }, text: expect.stringMatching(/^Done: 2,500 UGX/) },
      ]);
    });

    it('the same final state delivered twice at once is read once: the other finds it being read', async () => {
      const { notifier, made, d, reads } = untrusted();
      const id = paymentId++;
      await ourPayment(made, id);
      reads.states.set(String(id), 'processed');
      const results = await Promise.allSettled([
        d.dispatch(paymentEvent(id, 'processed')),
        d.dispatch(paymentEvent(id, 'processed')),
      ]);
      expect(
        results.filter((r) => r.status === 'fulfilled').map((r) => (r as PromiseFulfilledResult<string>).value),
      ).toEqual(['sent']);
      expect(results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason)).toEqual([
        expect.any(BusyError),
      ]);
      expect(reads.reads).toBe(1);
      // The retry of the other finds it told, without a read.
      expect(await d.dispatch(paymentEvent(id, 'processed'))).toBe('duplicate');
      expect(reads.reads).toBe(1);
      expect(notifier.sent).toHaveLength(1);
    });

    it('two processes, one reading and telling a final state while the other looks at the marks and acts only after the first let go: one read, told once', async () => {
      const made = new MadeRecords({ store: new MemoryStore(), logger });
      const reads = new FakeReads();
      const marks = makeMarks();
      const id = paymentId++;
      await ourPayment(made, id);
      reads.states.set(String(id), 'processed');
      const first = new GatedNotifier();
      const second = new RecordingNotifier();
      const a = createDispatcher({
        marks,
        made,
        credentialsConfigured: false,
        reads,
        notifiers: { telegram: first },
        logger,
      });
      const late = answeringLate(marks);
      const b = createDispatcher({
        marks: late.marks,
        made,
        credentialsConfigured: false,
        reads,
        notifiers: { telegram: second },
        logger,
      });
      // A has read the outcome and is telling it (its chat API call still out).
      const told = a.dispatch(paymentEvent(id, 'processed'));
      await first.entered;
      // B looks at the marks now, and acts on what they said only after A told it and let go.
      const looked = b.dispatch(paymentEvent(id, 'processed')).catch((err: unknown) => err);
      await late.answered;
      first.open();
      expect(await told).toBe('sent');
      late.deliver();
      // What B saw was A reading it: B reads nothing (the queue retries it), and its retry finds it told.
      const result = await looked;
      expect(reads.reads).toBe(1);
      expect(result).toBeInstanceOf(BusyError);
      expect(await b.dispatch(paymentEvent(id, 'processed'))).toBe('duplicate');
      expect(reads.reads).toBe(1);
      expect([...first.sent, ...second.sent].map((m) => m.text)).toEqual([expect.stringMatching(/^Done/)]);
    });

    it("a forged final state that differs from the service's final state tells the service's", async () => {
      const { notifier, made, d, reads } = untrusted();
      const id = paymentId++;
      await ourPayment(made, id);
      reads.states.set(String(id), 'processed');
      expect(await d.dispatch(paymentEvent(id, 'rejected', { rejected_reason: 'fraud' }))).toBe('sent');
      expect(notifier.sent.map((m) => m.text)).toEqual([expect.stringMatching(/^Done/)]);
      expect(await d.dispatch(paymentEvent(id, 'processed'))).toBe('duplicate');
    });

    it("spends no read on the open states of an intent not linked yet (they race the create's answer)", async () => {
      const { notifier, made, d, reads } = untrusted();
      const id = paymentId++;
      await made.intend({
        kind: 'payment',
        ref: `ref-${id}`,
        chat: 'telegram:78',
        amount: '2500',
        currency: 'UGX',
        payee: '+256772000001',
      });
      reads.states.set(String(id), 'validated');
      expect(await d.dispatch(paymentEvent(id, 'new'))).toBe('ignored');
      expect(await d.dispatch(paymentEvent(id, 'validated'))).toBe('unknown');
      expect(reads.reads).toBe(0);
      expect(notifier.sent).toEqual([]);
    });

    it("links a lost answer's id from the body's ref only when the service's read carries our ref", async () => {
      const { notifier, made, d, reads } = untrusted();
      const id = paymentId++;
      await made.intend({
        kind: 'payment',
        ref: `ref-${id}`,
        chat: 'telegram:77',
        amount: '2500',
        currency: 'UGX',
        payee: '+256772000001',
      });
      // A forged body: another payment's id (reads with another ref) claiming our ref.
      const other = paymentId++;
      reads.states.set(String(other), 'processed');
      expect(await d.dispatch(paymentEvent(other, 'processed', { metadata: { ref: `ref-${id}` } }))).toBe('unknown');
      expect(await made.byId('payment', String(other))).toBeNull();
      reads.states.set(String(id), 'processed');
      expect(await d.dispatch(paymentEvent(id, 'processed'))).toBe('sent');
      expect(notifier.sent.map((m) => m.address.conversationId)).toEqual(['77']);
    });
  });
});

/** A notifier whose sends to some chats fail a number of times first. */
class FlakyNotifier implements Notifier {
  readonly sent: string[] = [];
  constructor(private readonly failures: Map<string, number>) {}
  async send(address: Address, text: string): Promise<void> {
    const left = this.failures.get(address.conversationId) ?? 0;
    if (left > 0) {
      this.failures.set(address.conversationId, left - 1);
      throw new Error(`chat api 502 for ${address.conversationId}`);
    }
    this.sent.push(`${address.conversationId} ${text.slice(0, 4)}`);
  }
}

const settle = (n: { queue: { depth(): Promise<number> } }, told: () => number, expected: number) =>
  until(`the queue empty and ${expected} told`, async () => (await n.queue.depth()) === 0 && told() >= expected, {
    timeoutMs: 10_000,
    everyMs: 10,
  });

const backends: Array<
  [string, () => { redisUrl?: string; keyPrefix?: string; queueName?: string; cleanup(): Promise<void> }]
> = [
  ['memory', () => ({ cleanup: async () => undefined })],
  [
    'redis',
    () => {
      const keyPrefix = uniquePrefix('notify-e2e');
      const queueName = `test-notify-e2e-${process.pid}-${Date.now()}`;
      return {
        redisUrl: REDIS_URL,
        keyPrefix,
        queueName,
        async cleanup() {
          await inspector(keyPrefix).cleanup();
          await cleanupQueues(queueName, keyPrefix);
        },
      };
    },
  ],
];

/** A client no test here reads with (they run with credentials: no confirming reads). */
const unusedClient = new MomoClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'unused', maxRetries: 0 });
const credentials = { user: 'momo', password: 'secret' };
const basic = `Basic ${Buffer.from('momo:secret').toString('base64')}`;

describe.each(backends)('notifications end to end on the %s queue', (_name, backend) => {
  it('answers each delivery 200 once queued (deliveries of one turn share a job) and tells each once', async () => {
    const env = backend();
    const notifier = new FlakyNotifier(new Map());
    const made = new MadeRecords({ store: new MemoryStore(), logger });
    const n = createNotifications({
      made,
      client: unusedClient,
      basicAuth: credentials,
      ...env,
      notifiers: { telegram: notifier },
      verify: { default: 'accept' },
      logger,
    });
    const direct = new DirectRoutes();
    n.addRoutes(direct);
    const server = createServer(direct.serve(express())).listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const first = paymentId;
      paymentId += 30;
      for (let i = 0; i < 30; i++) await ourPayment(made, first + i, `telegram:${first + i}`, '10');
      // 30 payments, each delivered twice, all at once; nothing is worked yet.
      const posts = Array.from({ length: 60 }, (_, i) =>
        fetch(`${base}/notifications/momo`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: basic },
          body: JSON.stringify({
            hook: { id: 1, event: 'payment.status.changed' },
            data: {
              id: first + (i % 30),
              state: 'processed',
              amount: '10',
              currency: 'UGX',
              metadata: { chat: 'telegram:1' },
            },
          }),
        }),
      );
      expect((await Promise.all(posts)).map((r) => r.status)).toEqual(Array(60).fill(200));
      const jobs = await n.queue.depth();
      expect(jobs).toBeGreaterThan(0);
      expect(jobs).toBeLessThanOrEqual(60);
      n.start();
      await settle(n, () => notifier.sent.length, 30);
      expect(notifier.sent.sort()).toEqual(Array.from({ length: 30 }, (_, i) => `${first + i} Done`).sort());
    } finally {
      await new Promise((r) => server.close(r));
      await n.stop();
      await env.cleanup();
    }
  });

  it('retries a job of several whose one chat API call failed: that one is told, none twice', async () => {
    const env = backend();
    const [a, b, c] = [paymentId++, paymentId++, paymentId++];
    const notifier = new FlakyNotifier(new Map([[String(b), 2]]));
    const made = new MadeRecords({ store: new MemoryStore(), logger });
    for (const id of [a, b, c]) await ourPayment(made, id, `telegram:${id}`);
    const n = createNotifications({
      made,
      client: unusedClient,
      basicAuth: credentials,
      ...env,
      notifiers: { telegram: notifier },
      verify: { default: 'accept' },
      queue: { backoffMs: 1, attempts: 5 },
      logger,
    });
    try {
      n.start();
      await n.queue.add([a, b, c, a].map((id) => paymentEvent(id, 'processed')));
      // The queue empty: every job, the repeated one too, has been worked (a repeat would have been told by now).
      await settle(n, () => notifier.sent.length, 3);
      expect(notifier.sent.sort()).toEqual([`${a} Done`, `${b} Done`, `${c} Done`].sort());
    } finally {
      await n.stop();
      await env.cleanup();
    }
  });
});

describe('notifications end to end in one process', () => {
  it('retries a failing chat API from the queue until the message is delivered', async () => {
    const notifier = new RecordingNotifier();
    notifier.failuresLeft = 3;
    const made = new MadeRecords({ store: new MemoryStore(), logger });
    const n = createNotifications({
      made,
      client: unusedClient,
      basicAuth: credentials,
      notifiers: { slack: notifier },
      verify: { default: 'accept' },
      queue: { backoffMs: 1, attempts: 6 },
      logger,
    });
    n.start();
    const id = paymentId++;
    await ourPayment(made, id, 'slack:T1:U1');
    // Delivered out of order and repeated, as the service may.
    for (const state of ['processed', 'validated', 'processed', 'approved', 'processed']) {
      await n.queue.add([paymentEvent(id, state)]);
    }
    await until('the queue empty', async () => (await n.queue.depth()) === 0);
    await n.stop();
    expect(notifier.sent).toHaveLength(1);
    expect(notifier.sent[0]!.address).toEqual({ channel: 'slack', conversationId: 'T1:U1' });
    expect(notifier.sent[0]!.text).toMatch(/^Done/);
  });

  it('reads a job queued by an earlier version (the raw body) as its notice', async () => {
    const notifier = new RecordingNotifier();
    const made = new MadeRecords({ store: new MemoryStore(), logger });
    const n = createNotifications({
      made,
      client: unusedClient,
      basicAuth: credentials,
      notifiers: { telegram: notifier },
      verify: { default: 'accept' },
      logger,
    });
    const id = paymentId++;
    await ourPayment(made, id);
    n.start();
    await (n.queue as unknown as { add(job: unknown): Promise<void> }).add({
      hook: { event: 'payment.status.changed' },
      data: { id, state: 'processed', amount: '2500', currency: 'UGX', metadata: { chat: 'telegram:55' } },
    });
    await until('the queue empty', async () => (await n.queue.depth()) === 0);
    await n.stop();
    expect(notifier.sent.map((m) => m.text)).toEqual([expect.stringMatching(/^Done/)]);
  });
});

describe('two deployments sharing a Redis (queues named by notificationQueueName)', () => {
  it("never take each other's queued notifications: every one is told by the deployment that made it", async () => {
    // Distinct per run, so this test never meets another run's workers; the digest is what app.ts names.
    const apiKeys = [`key-a-${process.pid}-${Date.now()}`, `key-b-${process.pid}-${Date.now()}`];
    const names = apiKeys.map(notificationQueueName);
    expect(names[0]).not.toEqual(names[1]);
    expect(names.join()).not.toMatch(/key-|:/);
    // One key prefix for both (two deployments left at the same REDIS_KEY_PREFIX): only the names part them.
    const keyPrefix = uniquePrefix('two-deployments');
    const deployments = apiKeys.map((_, i) => {
      const notifier = new RecordingNotifier();
      const made = new MadeRecords({ store: new MemoryStore(), logger });
      const n = createNotifications({
        made,
        client: unusedClient,
        basicAuth: credentials,
        redisUrl: REDIS_URL,
        keyPrefix,
        queueName: names[i],
        notifiers: { telegram: notifier },
        verify: { default: 'accept' },
        logger,
      });
      return { notifier, made, n };
    });
    const [a, b] = deployments as [(typeof deployments)[0], (typeof deployments)[0]];
    const first = paymentId;
    paymentId += 40;
    try {
      for (let i = 0; i < 40; i++) await ourPayment(a.made, first + i, `telegram:${first + i}`);
      // Both workers run while A's notifications are queued one job each: B's would take its share.
      a.n.start();
      b.n.start();
      for (let i = 0; i < 40; i++) await a.n.queue.add([paymentEvent(first + i, 'processed')]);
      await settle(a.n, () => a.notifier.sent.length, 40);
      expect(a.notifier.sent).toHaveLength(40);
      expect(b.notifier.sent).toHaveLength(0);
      expect(await b.n.queue.depth()).toBe(0);
    } finally {
      for (const { n } of deployments) await n.stop();
      for (const name of names) await cleanupQueues(name, keyPrefix);
      await inspector(keyPrefix).cleanup();
    }
  });
});
