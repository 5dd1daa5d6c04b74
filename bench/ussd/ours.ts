/**
 * Our side of the USSD benchmark: the real engine and USSD adapter on the Redis store, running the
 * benchmark's 4-step flow; its service calls (PIN check, payment) are answered in-process.
 */
import express from 'express';
import { createEngine } from '../../src/conversation/engine.js';
import { loadAccessPolicy } from '../../src/conversation/policy.js';
import { RedisStore } from '../../src/conversation/redis-store.js';
import { addUssdRoutes } from '../../adapters/ussd/index.js';
import { createLogger } from '../../src/log.js';
import { benchFlow } from './send.machine.js';

/** The engine our side runs: the benchmark's flow on the Redis store, its services answered in-process. */
export function oursEngine(redisUrl: string, keyPrefix: string) {
  const logger = createLogger('silent');
  const store = new RedisStore({ url: redisUrl, keyPrefix });
  let paid = 0;
  const engine = createEngine({
    store,
    services: {
      verifyPin: async () => undefined,
      createPayment: async () => ({ id: String(++paid), state: 'new' }),
    },
    policy: loadAccessPolicy(),
    flows: { menu: benchFlow },
    defaultCountry: 'UG',
    currencies: ['UGX'],
    sessionTtlSeconds: 600,
    deadlineMs: { ussd: 3000, telegram: 2500, slack: 2500 },
    logger,
  });
  return { engine, store, logger };
}

export function oursApp(redisUrl: string, keyPrefix = 'bench:ussd:ours:'): express.Express {
  const { engine, logger } = oursEngine(redisUrl, keyPrefix);
  const app = express();
  // Open routes, as the embedded sandbox's demo serves them: the benchmark measures the hop, not the guard.
  addUssdRoutes(app, { engine, serviceCode: '*384*123#', deadlineMs: 3000, logger, access: { open: true }, digestKey: 'bench-digest-key' });
  return app;
}
