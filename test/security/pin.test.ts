/**
 * PINs: what is stored cannot give a PIN back, and guessing cannot beat the three-try lock.
 * - The USSD state kept with the conversation holds a digest of the answers so far (to tell a resend from a
 *   new answer). Before, a plain SHA-256 of text whose other answers an attacker knows (they are the
 *   payment's details): 10^4 hashes recovered the PIN from a copy of the record. Now an HMAC under a key
 *   Redis never holds.
 * - A try is counted before its PIN is compared, atomically: before, every try read the count first, so
 *   tries arriving together (several gateways, several processes) were all compared, the right PIN among them.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccessPolicy, hashPin } from '../../src/conversation/calls/access-policy.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { RedisStore } from '../../src/store/redis-store.js';
import type { Store } from '../../src/store/types.js';
import { AtSession } from '../e2e/helpers.js';
import { inspector, REDIS_URL, uniquePrefix } from '../conversation/redis-helper.js';
import { CALLBACK_TOKEN, PIN, TELLER, startProductionProduct, type ProductionProduct } from './production.js';
import { keys } from '../../src/store/keys.js';

describe('the stored USSD record', () => {
  let product: ProductionProduct;
  beforeAll(async () => {
    product = await startProductionProduct();
  });
  afterAll(async () => {
    await product?.stop();
  });

  it('does not give the PIN back to whoever reads it, even knowing every other answer', async () => {
    const answers = ['1', '1', '0772000001', 'Sarah', 'Nakato', '5000', '1', 'rent', '1'];
    const ussd = new AtSession(product.url, TELLER, undefined, `/ussd/africastalking/${CALLBACK_TOKEN}`);
    await ussd.dial();
    for (const answer of answers) await ussd.answer(answer);
    expect(await ussd.answer(PIN)).toMatch(/^END Sent: .* Ref MC-[A-Z0-9]+\./s);

    // A copy of the record, as a Redis dump, a backup or a replica would hold it.
    const record = JSON.stringify(
      (await product.app.store.get(keys.conversation({ channel: 'ussd', conversationId: TELLER })))?.snapshot,
    );
    const seenLength = Number(/"seenLength":(\d+)/.exec(record)?.[1]);
    const seenDigest = /"seenDigest":"([^"]+)"/.exec(record)?.[1];
    expect(seenDigest).toBeDefined();
    expect(record).not.toContain(`*${PIN}`);
    const known = `${answers.join('*')}*`;
    expect(seenLength).toBe(known.length + PIN.length);

    // The attacker tries every 4-digit PIN after the answers they know.
    const found: string[] = [];
    for (let n = 0; n < 10_000; n++) {
      const guess = String(n).padStart(4, '0');
      if (
        createHash('sha256')
          .update(known + guess)
          .digest('base64url') === seenDigest
      )
        found.push(guess);
    }
    expect(found).toEqual([]);
  });
});

describe('PIN tries', () => {
  const policy = new AccessPolicy({
    roles: { teller: { flows: ['pay'], perPaymentLimit: { UGX: '1000' }, dailyLimit: { UGX: '1000' } } },
    users: { telegram: {}, slack: {}, ussd: { [TELLER]: { role: 'teller', pin: hashPin(PIN) } } },
  });
  const attempt = (store: Store, pin: string) =>
    policy.verifyPin(store, { channel: 'ussd', userId: TELLER, pin }).then(
      () => 'ok',
      (failure: { code: string }) => failure.code,
    );

  /** Ten guesses sent at once, the right PIN last: no more than three are compared, so the right one is locked out. */
  async function burst(store: Store): Promise<string[]> {
    const guesses = ['0000', '1111', '2222', '3333', '4444', '5555', '6666', '7777', '9999', PIN];
    return Promise.all(guesses.map((pin) => attempt(store, pin)));
  }

  it('tries sent together are counted before any is compared: the right PIN as the tenth is locked out (memory)', async () => {
    const outcomes = await burst(new MemoryStore());
    expect(outcomes.at(-1)).toBe('pin_locked');
    expect(outcomes.filter((o) => o === 'pin_wrong')).toHaveLength(2);
    expect(outcomes.filter((o) => o === 'pin_locked')).toHaveLength(8);
  });

  describe('on Redis, as several processes share it', () => {
    const prefix = uniquePrefix('security-pin');
    const stores = [
      new RedisStore({ url: REDIS_URL, keyPrefix: prefix }),
      new RedisStore({ url: REDIS_URL, keyPrefix: prefix }),
    ];
    afterAll(async () => {
      for (const store of stores) await store.close();
      await inspector(prefix).cleanup();
    });

    it('tries through two processes at once are counted together: the right PIN as the tenth is locked out', async () => {
      const guesses = ['0000', '1111', '2222', '3333', '4444', '5555', '6666', '7777', '9999', PIN];
      const outcomes = await Promise.all(guesses.map((pin, i) => attempt(stores[i % 2]!, pin)));
      expect(outcomes.at(-1)).toBe('pin_locked');
      expect(outcomes.filter((o) => o === 'ok')).toEqual([]);
      expect(outcomes.filter((o) => o === 'pin_wrong')).toHaveLength(2);
    });
  });

  it('one at a time: two wrong tries, then the right PIN passes and the count starts again', async () => {
    const store = new MemoryStore();
    expect(await attempt(store, '0000')).toBe('pin_wrong');
    expect(await attempt(store, '1111')).toBe('pin_wrong');
    expect(await attempt(store, PIN)).toBe('ok');
    expect(await attempt(store, '0000')).toBe('pin_wrong');
    expect(await attempt(store, '1111')).toBe('pin_wrong');
    expect(await attempt(store, '2222')).toBe('pin_locked');
    expect(await attempt(store, PIN)).toBe('pin_locked');
  });
});
