/**
 * Our side of the USSD benchmark: the real engine and USSD adapter on the Redis store, running the
 * benchmark's 4-step flow; its service calls (PIN check, payment) are answered in-process. Every move is
 * counted by the funnel on the same Redis, as the product counts it (src/app.ts). With a journal (the money
 * hop's runs, bench.ts), the payment is recorded as the product records it before its call: our record in
 * Redis and the intent committed to the journal's database with the payment's reservation in its person's
 * daily total, in one statement (src/conversation/calls/made-records.ts).
 */
import express from 'express';
import { createEngine } from '../../src/conversation/engine/engine.js';
import { loadAccessPolicy } from '../../src/conversation/calls/access-policy.js';
import { RedisStore } from '../../src/store/redis-store.js';
import { addUssdRoutes } from '../../adapters/ussd/index.js';
import { DirectRoutes } from '../../src/http/direct-routes.js';
import { createLogger } from '../../src/log.js';
import type { RedisTarget } from '../../src/redis/connect.js';
import { createFunnel } from '../../src/ops/funnel.js';
import { MadeRecords, recordMade } from '../../src/conversation/calls/made-records.js';
import type { FlowCalls } from '../../flows/calls.js';
import type { MoneyJournal } from '../../src/journal/index.js';
import type { Channel } from '../../src/conversation/types.js';
import { benchFlow } from './send.machine.js';
import { channelCapabilities } from '../../adapters/capabilities.js';

/**
 * The engine our side runs: the benchmark's flow on the Redis store, its services answered in-process, and
 * the funnel. The funnel's keys sit beside the sessions' (`<prefix>-funnel:`), not under them: one day's
 * hash is shared by every session and is not part of the bytes a session costs.
 */
export function oursEngine(
  redisUrl: RedisTarget,
  keyPrefix: string,
  options: { funnel?: boolean; journal?: MoneyJournal } = {},
) {
  const logger = createLogger('silent');
  const store = new RedisStore({ url: redisUrl, keyPrefix });
  const funnelPrefix = `${keyPrefix.replace(/:$/, '')}-funnel:`;
  // Without it (bench/profile/hops.ts --funnel, the baseline), the engine tells nobody of its moves.
  const funnel =
    options.funnel === false
      ? undefined
      : createFunnel({ redisUrl, keyPrefix: funnelPrefix, flows: { menu: benchFlow }, logger });
  let paid = 0;
  const answered = {
    verifyPin: async () => undefined,
    createPayment: async () => ({ id: String(++paid), state: 'new' }),
  } as Partial<FlowCalls> as FlowCalls;
  const policy = loadAccessPolicy();
  // The product's recording of what it makes (src/app.ts): the intent in Redis and in the journal, together,
  // the payment's reservation in its person's daily total in the intent's statement.
  const calls = options.journal
    ? recordMade(answered, new MadeRecords({ store, logger }), logger, {
        journal: options.journal,
        reservation: {
          of: (input) => policy.reservationOf({ ...input, channel: input.channel as Channel }),
          check: (input) => policy.checkReservation({ ...input, channel: input.channel as Channel }),
          refused: (reservation, total) => policy.overDayOf(reservation, total),
        },
      })
    : answered;
  const engine = createEngine({
    store,
    channels: channelCapabilities,
    services: calls,
    policy,
    flows: { menu: benchFlow },
    defaultCountry: 'UG',
    currencies: ['UGX'],
    sessionTtlSeconds: 600,
    deadlineMs: { ussd: 3000, telegram: 2500, slack: 2500 },
    ...(funnel ? { onTransition: (move) => funnel.record(move) } : {}),
    logger,
  });
  return { engine, store, logger, funnel, funnelPrefix };
}

/** Our app and its direct routes (the gateways'), as src/app.ts serves them: `direct.serve(app)`. */
export function oursApp(
  redisUrl: RedisTarget,
  keyPrefix = 'bench:ussd:ours:',
  journal?: MoneyJournal,
): { app: express.Express; direct: DirectRoutes } {
  const { engine, logger } = oursEngine(redisUrl, keyPrefix, journal ? { journal } : {});
  const app = express();
  const direct = new DirectRoutes();
  // Open routes, as the embedded sandbox's demo serves them: the benchmark measures the hop, not the guard.
  addUssdRoutes(app, direct, {
    engine,
    serviceCode: '*384*123#',
    deadlineMs: 3000,
    logger,
    access: { open: true },
    digestKey: 'bench-digest-key',
  });
  return { app, direct };
}
