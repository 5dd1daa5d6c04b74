/**
 * Two product processes (the real engine, services, client and USSD route each, over real HTTP) on one Redis
 * and one service, as behind a load balancer, measured at the service: a new dial reaching the second process
 * while the first holds the payment call does not call the service again; when the first dies holding it,
 * the second takes the run over on its own, under the same key, and the service makes one payment.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { RedisStore } from '../../src/store/index.js';
import { keys } from '../../src/store/keys.js';
import { inspector, REDIS_URL, uniquePrefix } from '../conversation/redis-helper.js';
import { dyingStore } from '../conversation/engine-fixtures.js';
import { postAt } from '../adapters/ussd/helpers.js';
import { ONE_CURRENCY_PAYMENT, paymentsOf, startStack, type Stack } from '../adapters/ussd/stack.js';
import { reading, until } from '../until.js';

const prefix = uniquePrefix('one-runner');
const raw = inspector(prefix);
const stores: RedisStore[] = [];
const stacks: Stack[] = [];
afterAll(async () => {
  for (const stack of stacks.reverse()) await stack.close();
  await Promise.all(stores.map((s) => s.close()));
  await raw.cleanup();
});

/** Payment creations seen at the service, with their keys; the first of them waits for `release`. */
function heldPayments() {
  const keysSeen: string[] = [];
  const answered: number[] = [];
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const fetchHeld: typeof fetch = async (input, init) => {
    if (!(init?.method === 'POST' && /\/api\/payments\/?$/.test(new URL(String(input)).pathname)))
      return fetch(input, init);
    keysSeen.push(new Headers(init.headers).get('duplicate-check-key') ?? '');
    if (keysSeen.length === 1) await released;
    const response = await fetch(input, init);
    answered.push(response.status);
    return response;
  };
  return { keysSeen, answered, release, fetchHeld };
}

/** An Africa's Talking session on one process: every answer so far joined by `*`. */
function session(phone: string, sessionId: string) {
  const answers: string[] = [];
  return async (url: string, answer?: string) => {
    if (answer !== undefined) answers.push(answer);
    return (
      await postAt(url, {
        sessionId,
        serviceCode: '*384*123#',
        phoneNumber: phone,
        networkCode: '63902',
        text: answers.join('*'),
      })
    ).body;
  };
}

/** At most 30 s, asked every 10 ms: a loaded CI machine runs the whole suite beside this test. */
const WAIT = { timeoutMs: 30_000, everyMs: 10 };

describe('two processes on one Redis and one service', () => {
  // A deployment (key prefix) of each test's own: the first test's processes run on till the end of the file,
  // and on the same keys their sweep could take the second test's run over, paying at their own sandbox.
  let deployment: string;
  beforeEach(() => {
    deployment = `${prefix}${randomUUID().slice(0, 8)}:`;
  });
  const store = () => {
    const made = new RedisStore({ url: REDIS_URL, keyPrefix: deployment });
    stores.push(made);
    return made;
  };

  it('a new dial at the second process while the first holds the payment call: one POST /api/payments', async () => {
    const held = heldPayments();
    const first = await startStack({ store: store(), deadlineMs: 2000, fetch: held.fetchHeld });
    stacks.push(first);
    const second = await startStack({
      store: store(),
      deadlineMs: 2000,
      fetch: held.fetchHeld,
      service: { sandbox: first.sandbox, url: first.url },
    });
    stacks.push(second);
    const phone = '+256772160001';
    const hop = session(phone, `ONE-${randomUUID()}`);
    expect(await hop(first.url)).toMatch(/^CON /);
    for (const answer of ONE_CURRENCY_PAYMENT.slice(0, -1)) expect(await hop(first.url, answer)).toMatch(/^CON /);
    // The PIN: the payment call goes out from the first process and is held at the service.
    expect(await hop(first.url, ONE_CURRENCY_PAYMENT.at(-1))).toMatch(/^END We are still working on it/);
    await until('the payment call', () => held.keysSeen.length === 1, WAIT);
    // The user dials again; the gateway sends it to the second process: it waits, it does not pay.
    const redial = session(phone, `TWO-${randomUUID()}`);
    expect(await redial(second.url)).toMatch(
      /^END We are still working on it: it is being confirmed\. Do not send it again/,
    );
    expect(held.keysSeen).toHaveLength(1);
    held.release();
    await first.engine.drain();
    expect(held.keysSeen).toHaveLength(1);
    expect(paymentsOf(first.sandbox, phone)).toHaveLength(1);
    // The next dial shows the outcome.
    const after = await session(phone, `THREE-${randomUUID()}`)(second.url);
    expect(after).toContain(`Ref ${String(paymentsOf(first.sandbox, phone)[0]?.id)}.`);
  });

  it('the first dies holding the payment call: the second takes it over without a message, under the same key, one payment', async () => {
    const held = heldPayments(); // the first process's call is held on its way to the service
    const seenBySecond: string[] = [];
    const counted: typeof fetch = async (input, init) => {
      if (init?.method === 'POST' && /\/api\/payments\/?$/.test(new URL(String(input)).pathname))
        seenBySecond.push(new Headers(init.headers).get('duplicate-check-key') ?? '');
      return fetch(input, init);
    };
    const dies = dyingStore(store());
    // A lease that a live holder keeps through the event-loop stalls of a loaded machine (at 400 ms the first,
    // only slow, lost its run to the second before its call, and the case tested no death): the second takes
    // over once the dead one's has run out.
    const engine = { runLeaseMs: 1500, sweepEveryMs: 100 };
    const first = await startStack({
      store: dies,
      deadlineMs: 2000,
      fetch: held.fetchHeld,
      engine,
    });
    const second = await startStack({
      store: store(),
      deadlineMs: 2000,
      fetch: counted,
      service: { sandbox: first.sandbox, url: first.url },
      engine,
    });
    stacks.push(second);
    const phone = '+256772160002';
    const hop = session(phone, `DIE-${randomUUID()}`);
    await hop(first.url);
    for (const answer of ONE_CURRENCY_PAYMENT.slice(0, -1)) await hop(first.url, answer);
    expect(await hop(first.url, ONE_CURRENCY_PAYMENT.at(-1))).toMatch(/^END We are still working on it/);
    await until('the payment call', () => held.keysSeen.length === 1, WAIT);
    dies.die(); // gone: no more lease renewals, no writes
    void first.engine.stop();
    // Without any message from the user, the second process's sweep finds the lease expired, repeats the call
    // under the same key and keeps the outcome for the next dial: the outcome itself, named by the payment's id,
    // for the inbox may hold a note kept before it (under load a holder only slow may still lose its lease at an
    // earlier step, and the run taken over, ending at a question, keeps "Nothing was sent"), which is no outcome.
    // A timeout names the last reading: the payments, the inbox and what the engines logged.
    const pendingKey = `${deployment}${keys.pending({ channel: 'ussd', conversationId: phone })}`;
    await until(
      'the outcome kept by the second',
      reading(
        async () => ({
          paid: paymentsOf(first.sandbox, phone).map((p) => p.id),
          inbox: await raw.redis.get(pendingKey),
          engine: [...first.logs, ...second.logs]
            .map((line) => (JSON.parse(line) as { msg: string }).msg)
            .filter((msg) => msg.startsWith('engine:')),
        }),
        ({ paid, inbox }) => paid.length > 0 && inbox !== null && inbox.includes(`Ref ${String(paid[0])}.`),
      ),
      WAIT,
    );
    expect(seenBySecond).toEqual(held.keysSeen);
    expect(paymentsOf(first.sandbox, phone)).toHaveLength(1);
    // The dead process's call reaches the service at last: the same key, so no second payment.
    held.release();
    await until("the dead process's call answered", () => held.answered.length === 1, WAIT);
    expect(paymentsOf(first.sandbox, phone)).toHaveLength(1);
    const next = await session(phone, `NEXT-${randomUUID()}`)(second.url);
    expect(next).toContain(`Ref ${String(paymentsOf(first.sandbox, phone)[0]?.id)}.`);
  }, 90_000);
});
