/**
 * A product process killed (SIGKILL, no shutdown of any kind) while its payment call is out: another process
 * on the same Redis takes the run over by its sweep, with no message from the user, repeats the call under
 * the same Duplicate-Check-Key and keeps the outcome for the user's next dial. The service holds one
 * payment. Both are real processes (`node dist/src/main.js`); the killed one's call never reaches the service.
 */
import { Redis } from 'ioredis';
import { keys } from '../../src/store/keys.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPin } from '../../src/conversation/calls/access-policy.js';
import { AtSession } from '../e2e/helpers.js';
import { TEST_REDIS_URL } from '../services.js';
import { reading, until } from '../until.js';
import {
  cleanProductKeys,
  dropSharedDatabase,
  productKeyPrefix,
  startProductProcess,
  startService,
  type ProductProcess,
  type Service,
} from './product.js';

/** The tests' Redis database (TEST_REDIS_URL), the products' keys under a prefix of this file's own. */
const REDIS_URL = TEST_REDIS_URL;
const PREFIX = productKeyPrefix('kill');
const API_KEY = 'kill-key';
const USER = '+256701999001';
/** Production mode: the user with a PIN, and the gateway's callback token. */
const CALLBACK_TOKEN = 'kill-test-callback-token-0123';
const POLICY = JSON.stringify({
  roles: { payer: { flows: ['pay'], perPaymentLimit: { UGX: '100000' }, dailyLimit: { UGX: '100000' } } },
  users: { telegram: {}, slack: {}, ussd: { [USER]: { role: 'payer', pin: hashPin('1234') } } },
});
const GATEWAY = `/ussd/africastalking/${CALLBACK_TOKEN}`;

let service: Service;
let redis: Redis;
const products: ProductProcess[] = [];
/** Duplicate-Check-Keys of the payment creations that reached the proxy; the first is never forwarded. */
const paymentKeys: string[] = [];

beforeAll(async () => {
  redis = new Redis(REDIS_URL);
  await cleanProductKeys(redis, PREFIX);
  service = await startService(API_KEY, async (req) => {
    paymentKeys.push(String(req.headers['duplicate-check-key']));
    if (paymentKeys.length === 1) await new Promise(() => {}); // held: its process dies with it out
  });
});

afterAll(async () => {
  for (const product of products) if (product.child.exitCode === null) product.child.kill('SIGKILL');
  await service?.close();
  await cleanProductKeys(redis, PREFIX);
  await redis?.quit();
  await dropSharedDatabase();
});

async function start(): Promise<ProductProcess> {
  const product = await startProductProcess({
    LOG_LEVEL: 'warn',
    MOMO_BASE_URL: service.url,
    MOMO_API_KEY: API_KEY,
    REDIS_URL,
    REDIS_KEY_PREFIX: PREFIX,
    ACCESS_POLICY: POLICY,
    USSD_CALLBACK_TOKEN: CALLBACK_TOKEN,
    // The killed process's lease runs out soon after its death (no other process is up before it): the
    // survivor's sweep takes the run over once the survivor listens, not ten seconds on.
    RUN_LEASE_MS: '1000',
    RUN_SWEEP_MS: '100',
  });
  products.push(product);
  return product;
}

describe('SIGKILL while a payment call is out', () => {
  it('another process takes the run over on its own: one payment, the outcome kept for the next dial', async () => {
    const doomed = await start();
    const ussd = new AtSession(doomed.url, USER, undefined, GATEWAY);
    await ussd.dial();
    for (const answer of ['1', '1', '0772000001', 'Sarah', 'Nakato', '2500', '1', '1']) await ussd.answer(answer);
    expect(ussd.screens.at(-1)).toMatch(/PIN/);
    const confirmed = ussd.answer('1234').catch(() => 'killed');
    await until('the payment call at the service', () => paymentKeys.length > 0, { timeoutMs: 10_000 });
    expect(paymentKeys).toHaveLength(1);
    doomed.child.kill('SIGKILL');
    expect(await doomed.exit).toBeNull();
    await confirmed;

    // Nobody writes to the conversation again. The other process finds the dead one's lease expired.
    const survivor = await start();
    const pendingKey = `${PREFIX}${keys.pending({ channel: 'ussd', conversationId: USER })}`;
    const pending = await until(
      'the outcome kept for the next dial',
      reading(
        async () => ((await redis.get(pendingKey)) ?? '').replace(/^\d+:[\w-]+:/, ''),
        (kept) => /Sent: [\d,]+ UGX to .+\. Ref MC-[A-Z0-9]+\./.test(kept),
      ),
      { timeoutMs: 40_000, everyMs: 100 },
    );
    expect(pending).toMatch(/Sent: [\d,]+ UGX to .+\. Ref MC-[A-Z0-9]+\./);
    expect(paymentKeys).toHaveLength(2);
    expect(paymentKeys[1]).toBe(paymentKeys[0]);
    const chats = service.sandbox.controls
      .payments()
      .map((p) => (p as { metadata: Record<string, string> }).metadata.chat);
    expect(chats.filter((c) => c === `ussd:${USER}`)).toHaveLength(1);
    // The user's next dial shows it.
    expect(await new AtSession(survivor.url, USER, undefined, GATEWAY).dial()).toMatch(
      /Sent: [\d,]+ UGX to .+\. Ref MC-[A-Z0-9]+\./,
    );
    survivor.child.kill('SIGTERM');
    expect(await survivor.exit).toBe(0);
  }, 90_000);
});
