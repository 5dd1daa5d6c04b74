/**
 * The per-user request rate limit (src/ops/ratelimit.ts): past the limit a user is told to wait and the
 * engine is not called; other users and other channels are not affected; counters are shared between
 * processes through Redis; the product applies it on every channel.
 */
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/memory-store.js';
import type { ConversationEngine } from '../../src/conversation/engine/engine.js';
import type { Inbound, Prompt, SessionEnd } from '../../src/conversation/types.js';
import { commonMessages } from '../../flows/messages/common.js';
import { createLogger } from '../../src/log.js';
import { REDIS_URL } from '../conversation/redis-helper.js';
import {
  DEFAULT_RATE_LIMIT_MESSAGES,
  DEFAULT_RATE_LIMIT_WINDOW_SECONDS,
  sourceOf,
  withRateLimit,
} from '../../src/ops/ratelimit.js';
import { AtSession } from '../e2e/helpers.js';
import { startFuzzProduct, type Product } from '../fuzz/harness.js';
import { TelegramUser } from './drivers.js';
import { keys } from '../../src/store/keys.js';
import { until } from '../until.js';

const TOO_FAST = commonMessages.en['common.tooFast']!;
const TOO_FAST_SW = commonMessages.sw['common.tooFast']!;
const logger = createLogger('silent');

class CountingEngine implements ConversationEngine {
  readonly seen: Inbound[] = [];
  drained = false;
  async handle(inbound: Inbound): Promise<Prompt> {
    this.seen.push(inbound);
    return { text: `step ${this.seen.length}`, final: false };
  }
  async drain(): Promise<void> {
    this.drained = true;
  }
  async stop(): Promise<void> {
    await this.drain();
  }
  async handOn(): Promise<number> {
    return 0;
  }
  async sweep(): Promise<void> {}
  turn<S>(): Promise<S> {
    throw new Error('not used here');
  }
  async sessionEnded(): Promise<SessionEnd> {
    return { counted: false, reason: 'not used here' };
  }
  async toldLate(): Promise<void> {}
}

let messageIds = 0;
const from = (channel: Inbound['channel'], userId: string): Inbound => ({
  channel,
  userId,
  conversationId: userId,
  messageId: `m${messageIds++}`,
  text: 'hi',
});

describe('withRateLimit', () => {
  it('has the documented defaults', () => {
    expect([DEFAULT_RATE_LIMIT_MESSAGES, DEFAULT_RATE_LIMIT_WINDOW_SECONDS]).toEqual([30, 10]);
  });

  it('answers "too fast" past the limit without calling the engine; other users and channels go on', async () => {
    const engine = new CountingEngine();
    const limited = withRateLimit(engine, { messages: 5, windowSeconds: 60, logger });
    const answers: Prompt[] = [];
    for (let i = 0; i < 8; i++) answers.push(await limited.handle(from('telegram', 'alice')));
    expect(answers.slice(0, 5).map((a) => a.text)).toEqual(['step 1', 'step 2', 'step 3', 'step 4', 'step 5']);
    expect(answers.slice(5)).toEqual([1, 2, 3].map(() => ({ text: TOO_FAST, final: false })));
    expect(engine.seen).toHaveLength(5);

    // Another user, and the same id on another channel, have their own counts.
    expect((await limited.handle(from('telegram', 'bob'))).text).toBe('step 6');
    expect((await limited.handle(from('slack', 'alice'))).text).toBe('step 7');
    expect(engine.seen).toHaveLength(7);
    // The inner engine's other methods are still there (the product drains it on shutdown).
    await limited.drain();
    expect(engine.drained).toBe(true);
    await limited.close();
  });

  it("ends a USSD session (the screen cannot wait) and speaks the user's language", async () => {
    const store = new MemoryStore();
    await store.set(keys.profile('ussd', '+256772333001'), { lang: 'sw' }, null, 60);
    const engine = new CountingEngine();
    const limited = withRateLimit(engine, { messages: 1, windowSeconds: 60, store, logger });
    await limited.handle(from('ussd', '+256772333001'));
    expect(await limited.handle(from('ussd', '+256772333001'))).toEqual({ text: TOO_FAST_SW, final: true });
    expect(engine.seen).toHaveLength(1);
    await limited.close();
    await store.close();
  });

  it('refuses settings that would disable it by accident', () => {
    expect(() => withRateLimit(new CountingEngine(), { messages: 0, logger })).toThrow(/messages/);
    expect(() => withRateLimit(new CountingEngine(), { windowSeconds: 0.5, logger })).toThrow(/windowSeconds/);
  });

  describe('on Redis, shared between two processes', () => {
    const keyPrefix = `test-ratelimit-${process.pid}-${Date.now()}`;
    let redis: Redis;
    beforeAll(() => {
      redis = new Redis(REDIS_URL);
    });
    afterEach(async () => {
      const keys = await redis.keys(`${keyPrefix}*`);
      if (keys.length > 0) await redis.del(...keys);
    });
    afterAll(async () => {
      await redis.quit();
    });

    it("counts one user's messages across both processes", async () => {
      const first = new CountingEngine();
      const second = new CountingEngine();
      const a = withRateLimit(first, { messages: 4, windowSeconds: 60, redisUrl: REDIS_URL, keyPrefix, logger });
      const b = withRateLimit(second, { messages: 4, windowSeconds: 60, redisUrl: REDIS_URL, keyPrefix, logger });
      // Wait until both limiters' connections are ready (the limiter does not queue while connecting).
      await a.handle(from('slack', 'warmup-a'));
      await b.handle(from('slack', 'warmup-b'));
      await until('both limiters counting in Redis', async () => {
        if ((await redis.keys(`${keyPrefix}*`)).length >= 2) return true;
        await a.handle(from('slack', 'warmup-a'));
        await b.handle(from('slack', 'warmup-b'));
        return false;
      });
      expect((await redis.keys(`${keyPrefix}*`)).length).toBe(2);
      const before = first.seen.length + second.seen.length;
      const texts: string[] = [];
      // Alternately, as a load balancer would send them.
      for (let i = 0; i < 6; i++) texts.push((await (i % 2 === 0 ? a : b).handle(from('telegram', 'carol'))).text);
      expect(texts.filter((t) => t === TOO_FAST)).toHaveLength(2);
      expect(first.seen.length + second.seen.length - before).toBe(4);
      expect(await redis.get(`${keyPrefix}:telegram:carol`)).toBe('6');
      await a.close();
      await b.close();
    });
  });
});

describe('sourceOf (the per-source bucket)', () => {
  it("is the IPv4 address, an IPv4 caller on a dual-stack socket as IPv4, and an IPv6 caller's /64", () => {
    expect(sourceOf('196.201.214.9')).toBe('196.201.214.9');
    expect(sourceOf('::ffff:196.201.214.9')).toBe('196.201.214.9');
    // One host holds a whole /64: changing its last 64 bits does not make a new source.
    expect(sourceOf('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(sourceOf('2001:db8:1:2:ffff::9')).toBe('2001:db8:1:2::/64');
    expect(sourceOf('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
    expect(sourceOf(undefined)).toBe('unknown');
  });
});

describe('the product', () => {
  let product: Product;
  beforeAll(async () => {
    product = await startFuzzProduct({ RATE_LIMIT_MESSAGES: '4', RATE_LIMIT_WINDOW_SECONDS: '300' });
  });
  afterAll(async () => {
    await product?.stop();
  });

  it('tells a Telegram user who sends too much to wait, and still serves another', async () => {
    const flooder = new TelegramUser(product, 9101);
    for (let i = 0; i < 4; i++) expect(await flooder.say('/start')).toMatch(/What would you like to do/);
    // The fifth would start a payment; the engine never sees it.
    expect(await flooder.say('/pay')).toBe(TOO_FAST);
    expect(await new TelegramUser(product, 9102).say('/pay')).toMatch(/What do you want to send/);
  });

  it('ends the USSD session of a number that dials too often', async () => {
    const phone = '+256772333009';
    for (let i = 0; i < 4; i++) expect(await new AtSession(product.url, phone).dial()).toMatch(/^CON /);
    expect(await new AtSession(product.url, phone).dial()).toBe(`END ${TOO_FAST}`);
    expect(await new AtSession(product.url, '+256772333010').dial()).toMatch(/^CON /);
  });
});
