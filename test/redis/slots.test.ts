/**
 * Cluster-ready keys: every key builder of keys.ts gives a key with a hash tag, and the keys each script or
 * transaction touches share a slot (computed with the CRC16 Redis Cluster uses: ioredis's `cluster-key-slot`).
 * Statically, for each script's key set built from the builders over many ids; and as it happens, by watching
 * a real server (MONITOR) while a whole USSD payment and its notification go through the product: every
 * multi-key command and script (ours and BullMQ's) must name keys of one slot.
 */
import { createRequire } from 'node:module';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { userOfAddress } from '../../src/store/chat-address.js';
import {
  DEFAULT_KEY_PREFIX,
  keyPrefixProblem,
  keys,
  markKeys,
  OPEN_PARTS,
  PARTS,
  QUEUE_PARTS,
  queuePrefixes,
  queuePrefixesOf,
  tagOf,
} from '../../src/store/keys.js';
import type { Address } from '../../src/conversation/types.js';
import { AtSession, sandboxGet, startProduct } from '../e2e/helpers.js';
import { reading, until } from '../until.js';
import { startOwnRedis, stopAll } from './servers.js';

const slotOf = createRequire(import.meta.url)('cluster-key-slot') as (key: string) => number;
const PREFIX = 'momo:';

afterAll(stopAll);

/** Servers to start, the whole product and a payment: minutes on a loaded machine, not the default 30 s. */
const SLOW_TEST_MS = 240_000;

/** One id of every kind a builder takes, and the builders' calls with them. */
const asker = { channel: 'telegram', userId: '4242' };
const conversation: Address = { channel: 'slack', conversationId: 'T01:U02' };
const SAMPLES: Record<string, () => string | string[]> = {
  conversation: () => keys.conversation(conversation),
  conversationOf: () => keys.conversation(conversation),
  runLease: () => keys.runLease(keys.conversation(conversation)),
  openRuns: () => keys.openRuns(keys.conversation(conversation)),
  openRunsParts: () => keys.openRunsParts(),
  profile: () => keys.profile('ussd', '+256772000001'),
  pending: () => keys.pending({ channel: 'ussd', conversationId: '+256772000001' }),
  toldLate: () => keys.toldLate({ channel: 'ussd', conversationId: '+256772000001' }),
  contact: () => keys.contact('+256772000001'),
  ownContact: () => keys.ownContact(asker, '+256772000001'),
  ownRequests: () => keys.ownRequests(asker),
  recentPayees: () => keys.recentPayees(asker),
  paidNames: () => keys.paidNames('0b9c6a0e-6f7e-4c1e-9d7e-1f2a3b4c5d6e:pay'),
  made: () => keys.made('0b9c6a0e-6f7e-4c1e-9d7e-1f2a3b4c5d6e'),
  madeId: () => keys.madeId('a1b2c3d4e5f60718', 'payment', '123456'),
  openRequests: () => keys.openRequests('+256772000001', '5000', 'ugx'),
  dailySpend: () => keys.dailySpend('ussd:+256772000001', 'UGX', '2026-11-26'),
  spendReservation: () => keys.spendReservation('0b9c6a0e'),
  payout: () => keys.payout('cd34'),
  payoutsOpen: () => keys.payoutsOpen('cd34'),
  payoutsOpenParts: () => keys.payoutsOpenParts(),
  payoutSending: () => keys.payoutSending('cd34'),
  pinFailures: () => keys.pinFailures('ussd:+256772000001'),
  opsSignIn: () => keys.opsSignIn('ab'.repeat(32)),
  opsSignInFailures: () => keys.opsSignInFailures('203.0.113.7'),
  opsSignInRecorded: () => keys.opsSignInRecorded('cd'.repeat(32)),
  toldPreferredChat: () => keys.toldPreferredChat('cd'.repeat(32)),
  linkTries: () => keys.linkTries('telegram:4242'),
  linkCodesMade: () => keys.linkCodesMade('p-17'),
  telegramUpdate: () => keys.telegramUpdate(72),
  telegramUpdateDone: () => keys.telegramUpdateDone(72),
  telegramPrompt: () => keys.telegramPrompt('-100123'),
  slackEvent: () => keys.slackEvent('Ev01'),
  slackResponseUrl: () => keys.slackResponseUrl('ab'.repeat(32)),
  readyProbe: () => keys.readyProbe('q1Xb0Z9k-aE'),
  webhookRegistration: () => keys.webhookRegistration('https://momo.example/notifications/momo'),
  journalPending: () => keys.journalPending,
};

const slots = (group: string[]) => new Set(group.map((key) => slotOf(PREFIX + key)));

/** Conversations of every channel and shape (Slack team:user, Telegram private and group, phone numbers). */
const conversations: Address[] = [
  ...Array.from({ length: 200 }, (_, i) => ({
    channel: 'ussd' as const,
    conversationId: `+2567720${String(i).padStart(5, '0')}`,
  })),
  ...Array.from({ length: 50 }, (_, i) => ({
    channel: 'whatsapp' as const,
    conversationId: `2567720${String(i).padStart(5, '0')}`,
  })),
  ...Array.from({ length: 50 }, (_, i) => ({ channel: 'telegram' as const, conversationId: String(1000 + i) })),
  ...Array.from({ length: 50 }, (_, i) => ({ channel: 'telegram' as const, conversationId: `-100${i}:${2000 + i}` })),
  ...Array.from({ length: 50 }, (_, i) => ({ channel: 'slack' as const, conversationId: `T0${i}:U0${i}` })),
];

describe('keys.ts', () => {
  it('has a sample for every builder, and every key it builds carries a hash tag', () => {
    expect(Object.keys(SAMPLES).sort()).toEqual(Object.keys(keys).sort());
    for (const [name, sample] of Object.entries(SAMPLES)) {
      for (const key of [sample()].flat()) expect(tagOf(key), `${name}: ${key}`).not.toBe('');
    }
    expect(keys.conversationOf(keys.conversation(conversation))).toEqual(conversation);
    expect(keys.openRunsParts()).toHaveLength(PARTS);
    expect(new Set(keys.payoutsOpenParts())).toHaveProperty('size', OPEN_PARTS);
  });

  it('keeps each script and multi-key read in one slot', () => {
    const groups: Array<[string, string[]]> = [];
    for (const c of conversations) {
      const record = keys.conversation(c);
      const user = userOfAddress(c);
      // Compare-and-set with the run lease and the index of open runs (redis-store.ts COMPARE_AND_SET_LEASED,
      // LEASE, RELEASE_LEASE); the record read with the profile and pending outcomes (record-cache.ts readWith).
      groups.push([`lease script of ${record}`, [record, keys.runLease(record), keys.openRuns(record)]]);
      groups.push([`read of ${record}`, [record, keys.profile(c.channel, user), keys.pending(c), keys.toldLate(c)]]);
      groups.push([
        `user keys of ${record}`,
        [
          record,
          keys.ownRequests({ channel: c.channel, userId: user }),
          keys.recentPayees({ channel: c.channel, userId: user }),
          keys.ownContact({ channel: c.channel, userId: user }, '+256772000001'),
        ],
      ]);
      expect(keys.openRunsParts()).toContain(keys.openRuns(record));
    }
    for (let i = 0; i < 100; i++) {
      const ref = `ref-${i}-0b9c6a0e`;
      // The spend reservation (RESERVE, GIVE_BACK) with its person's daily total.
      groups.push([
        `spend of ${ref}`,
        [keys.spendReservation(ref), keys.dailySpend(`ussd:+25677200${i}`, 'UGX', '2026-11-26')],
      ]);
      // The notification marks (marks.ts TAKE, HOLD, DONE).
      const marks = markKeys(`payment:${ref}`, `payment:${ref}:processed`);
      groups.push([`marks of ${ref}`, [marks.rank, marks.sent, marks.lease, marks.reading]]);
      groups.push([`payout ${i}`, [keys.payout(String(i)), keys.payoutSending(String(i))]]);
    }
    groups.push(['journal drain', [keys.journalPending, `${keys.journalPending}:lock`]]);
    const split = groups
      .filter(([, group]) => slots(group).size !== 1)
      .map(([name, group]) => `${name}: ${group.join(' ')}`);
    expect(split).toEqual([]);
  });

  it('gives every BullMQ queue a tagged prefix, each queue its own parts, and one key always the same part', () => {
    const queues = ['notifications', 'followUps', 'sms'] as const;
    for (const prefix of queuePrefixes.all()) expect(tagOf(prefix), prefix).not.toBe('');
    // Every part of every queue a tag (a slot) of its own, none the earlier shared one.
    const every = queues.flatMap((queue) => queuePrefixes.parts(queue));
    expect(new Set(every.map(tagOf))).toHaveProperty('size', QUEUE_PARTS * queues.length);
    expect(every).not.toContain(queuePrefixes.shared);
    expect(new Set(queuePrefixes.all())).toEqual(new Set([queuePrefixes.shared, ...every]));
    for (const queue of queues) {
      const parts = queuePrefixes.parts(queue);
      const used = new Set<string>();
      for (let i = 0; i < 200; i++) {
        const key = `${i}-0b9c6a0e-6f7e-4c1e-9d7e-1f2a3b4c5d6e:pay`;
        expect(parts).toContain(queuePrefixes.part(queue, key));
        expect(queuePrefixes.part(queue, key)).toBe(queuePrefixes.part(queue, key));
        used.add(queuePrefixes.part(queue, key));
      }
      expect(used.size, queue).toBe(QUEUE_PARTS);
    }
  });

  it('keeps every tag under any key prefix the product takes (REDIS_KEY_PREFIX), and the default as it was', () => {
    const tagged = Object.values(SAMPLES).flatMap((build) => build());
    const address = { channel: 'ussd' as const, conversationId: '+256772000001' };
    for (const prefix of ['momo:', 'staging-2:', 'test:kill:1b4e28ba-2fa1-11d2-883f-0016d3cca427:']) {
      expect(keyPrefixProblem(prefix), prefix).toBeUndefined();
      // The prefix holds no brace: each key's tag (its slot) is the one it has without it.
      for (const key of tagged) expect(tagOf(prefix + key), prefix + key).toBe(tagOf(key));
      expect(slotOf(prefix + keys.conversation(address))).toBe(slotOf(keys.conversation(address)));
      // Each product's queues: tagged, and none another prefix's.
      const own = queuePrefixesOf(prefix).all();
      for (const queues of own) expect(tagOf(queues), queues).not.toBe('');
      if (prefix !== DEFAULT_KEY_PREFIX) for (const queues of own) expect(queuePrefixes.all()).not.toContain(queues);
    }
    expect(queuePrefixesOf(DEFAULT_KEY_PREFIX).all()).toEqual(queuePrefixes.all());
    expect(queuePrefixes.parts('notifications')).toEqual([
      '{momo-n0}:bull',
      '{momo-n1}:bull',
      '{momo-n2}:bull',
      '{momo-n3}:bull',
    ]);
    expect(queuePrefixes.shared).toBe('{momo}:bull');
  });

  it('keeps every BullMQ key of a queue part in one slot (the keys its scripts touch together)', () => {
    // BullMQ's keys are `<prefix>:<name>:<suffix>` (its queue keys) and `<prefix>:<name>:<job id>[:…]`.
    const suffixes = [
      'wait',
      'active',
      'delayed',
      'paused',
      'prioritized',
      'completed',
      'failed',
      'stalled',
      'stalled-check',
      'limiter',
      'meta',
      'events',
      'marker',
      'id',
      'pc',
      'repeat',
      'de:x',
      'follow-up_r_0',
      'follow-up_r_0:lock',
      'sms_k',
      '17',
      '17:logs',
    ];
    const split = queuePrefixes
      .all()
      .map((prefix) => suffixes.map((suffix) => `${prefix}:momo-notifications-abc:${suffix}`))
      .filter((group) => new Set(group.map(slotOf)).size !== 1);
    expect(split).toEqual([]);
  });

  it('spreads the users over the parts', () => {
    const used = new Set(conversations.map((c) => keys.openRuns(keys.conversation(c))));
    expect(used.size).toBeGreaterThan(PARTS / 2);
  });
});

/** The keys of a command as MONITOR prints it, when it names several: EVAL/EVALSHA's KEYS, MGET's, DEL's. */
function keysOf(args: string[]): string[] | undefined {
  const command = args[0]?.toLowerCase();
  if (command === 'evalsha' || command === 'eval' || command === 'evalsha_ro' || command === 'fcall')
    return args.slice(3, 3 + Number(args[2]));
  if (command === 'mget' || command === 'del' || command === 'unlink' || command === 'exists') return args.slice(1);
  return undefined;
}

describe('on a real server, as the product runs', () => {
  it(
    'sends no script or multi-key command whose keys span slots: a USSD payment and its notification',
    async () => {
      const server = await startOwnRedis();
      const monitor = new Redis({ port: server.port });
      const seen: string[][] = [];
      const watching = await monitor.monitor();
      watching.on('monitor', (_time: string, args: string[]) => seen.push(args));
      const app = await startProduct({ REDIS_URL: `redis://127.0.0.1:${server.port}` });
      try {
        const me = '+256700111444';
        const ussd = new AtSession(app.url, me);
        await ussd.dial();
        for (const answer of ['1', '1', '0772000001', 'Sarah', 'Nakato', '5000', '1', '1']) await ussd.answer(answer);
        expect(await ussd.answer('1234')).toMatch(/^END /);
        await until(
          'the payment processed',
          reading(
            () =>
              sandboxGet<{ count: number; results: Array<{ state: string }> }>(
                app,
                '/api/payments?phonenumber=%2B256772000001',
              ),
            (p) => p.count >= 1 && p.results[0]!.state === 'processed',
          ),
          { timeoutMs: 10_000, everyMs: 50 },
        );
        const next = await until(
          'the outcome at the next dial',
          reading(
            async () => new AtSession(app.url, me).dial(),
            (screen) => /reached|Done/i.test(screen),
          ),
          { timeoutMs: 10_000, everyMs: 50 },
        );
        expect(next).toMatch(/5,000 UGX/);
      } finally {
        await app.stop();
        watching.disconnect();
        monitor.disconnect();
      }
      const multi = seen
        .map((args) => ({ args, keys: keysOf(args) }))
        .filter((c): c is { args: string[]; keys: string[] } => (c.keys?.length ?? 0) > 1);
      // Ours and BullMQ's scripts ran (the lease script, the marks, the queue's).
      expect(multi.some((c) => c.keys.some((key) => key.startsWith(`${PREFIX}lease:`)))).toBe(true);
      expect(multi.some((c) => c.keys.some((key) => key.startsWith(`${PREFIX}notify:`)))).toBe(true);
      // The notification and the payment's follow-up, each in a part of its queue; nothing in the earlier one.
      for (const queue of ['notifications', 'followUps'] as const) {
        const parts = queuePrefixes.parts(queue);
        expect(
          multi.some((c) => c.keys.some((key) => parts.some((prefix) => key.startsWith(prefix)))),
          queue,
        ).toBe(true);
      }
      // The earlier shared queue is only read (for jobs an earlier version left): it holds no key.
      const check = new Redis({ port: server.port });
      try {
        expect(await check.keys(`${queuePrefixes.shared}:*`)).toEqual([]);
      } finally {
        check.disconnect();
      }
      const split = multi.filter((c) => new Set(c.keys.map(slotOf)).size > 1).map((c) => c.args.slice(0, 8).join(' '));
      expect(split).toEqual([]);
    },
    SLOW_TEST_MS,
  );
});
