/**
 * Child process of the notifications benchmark: `tsx bench/notify/serve.ts <ours|ours-memory|bare>` serves
 * POST /notifications/momo on a free port and prints `PORT <n>`; GET /__stats answers the deliveries received,
 * the notifier calls made so far and the process's own CPU time.
 *
 * ours: the product's notifications as src/app.ts builds them with REDIS_URL set and webhook credentials:
 * createNotifications with the BullMQ queue (the deliveries received in one event-loop turn queued as one
 * job), our records of what we made read from the Redis session store (5,000 collection requests, recorded
 * at start as the request flow records them), the order marks, lease and dedup mark in Redis (one Lua
 * script per step, under the benchmark's key prefix), the user's language read from the store, and a
 * notifier that counts its calls. It runs in its own Redis database
 * (BENCH_NOTIFY_DB, default 9), under this run's own queue name and key prefix (config.ts), so it never meets another
 * process's workers; only its own keys are deleted afterwards.
 * ours-memory: the same without REDIS_URL (memory queue, marks and store), as `npm start` runs by default.
 * bare: an express route that only answers 200.
 */
import express from 'express';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MemoryStore } from '../../src/store/memory-store.js';
import { DirectRoutes } from '../../src/http/direct-routes.js';
import { keys } from '../../src/store/keys.js';
import { userOfAddress } from '../../src/store/chat-address.js';
import { RedisStore } from '../../src/store/redis-store.js';
import type { Store } from '../../src/store/types.js';
import type { UserProfile } from '../../flows/types.js';
import { createLogger } from '../../src/log.js';
import { createNotifications } from '../../src/notifications/index.js';
import { MadeRecords } from '../../src/conversation/calls/made-records.js';
import { MomoClient } from '../../src/momo/index.js';
import { profileRoutes } from '../profile/hooks.js';
import { BENCH_REQUESTS, BENCH_WEBHOOK, benchRequest, NOTIFY_PREFIX, notifyRedisTarget, QUEUE_NAME } from './config.js';

const kind = process.argv[2];
const app = express();
/** Ours serves its routes in front of the app, as src/app.ts does (`direct.serve(app)`). */
const direct = new DirectRoutes();
let notified = 0;
let received = 0;
let closing: () => Promise<void> = async () => undefined;
const count = (_req: unknown, _res: unknown, next: () => void) => {
  received++;
  next();
};
app.use('/notifications/momo', count);
direct.use(count);

if (kind === 'ours' || kind === 'ours-memory') {
  const redisUrl = kind === 'ours' ? notifyRedisTarget() : undefined;
  const store: Store = redisUrl ? new RedisStore({ url: redisUrl, keyPrefix: NOTIFY_PREFIX }) : new MemoryStore();
  const logger = createLogger('silent');
  const made = new MadeRecords({ store, logger });
  for (let i = 0; i < BENCH_REQUESTS; i += 500) {
    await Promise.all(
      Array.from({ length: Math.min(500, BENCH_REQUESTS - i) }, async (_, j) => {
        const { ref, id, chat, payee } = benchRequest(i + j);
        await made.intend({ kind: 'request', ref, chat, amount: '5000', currency: 'UGX', payee });
        await made.accepted(ref, id);
      }),
    );
  }
  const notifications = createNotifications({
    made,
    // With credentials no read is made: the client is never called.
    client: new MomoClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'unused' }),
    basicAuth: BENCH_WEBHOOK,
    redisUrl,
    keyPrefix: NOTIFY_PREFIX,
    queueName: QUEUE_NAME,
    notifiers: {
      telegram: {
        send: async () => {
          notified++;
        },
      },
    },
    verify: { default: 'accept' },
    languageOf: async (address) => {
      const stored = await store.get(keys.profile(address.channel, userOfAddress(address)));
      return (stored?.snapshot as UserProfile | undefined)?.lang;
    },
    // The product's queue settings (none: its defaults); BENCH_NOTIFY_CONCURRENCY only for experiments.
    ...(process.env.BENCH_NOTIFY_CONCURRENCY
      ? { queue: { concurrency: Number(process.env.BENCH_NOTIFY_CONCURRENCY) } }
      : {}),
    logger,
  });
  notifications.start();
  notifications.addRoutes(direct);
  closing = async () => {
    await notifications.stop();
    await store.close();
  };
} else if (kind === 'bare') {
  app.post('/notifications/momo', (_req, res) => {
    notified++; // answered: for the bare route that is all there is
    res.status(200).json({ ok: true });
  });
} else {
  throw new Error(`unknown kind ${kind}`);
}

profileRoutes(app);
app.get('/__stats', (_req, res) => {
  const cpu = process.cpuUsage();
  res.json({ received, notified, cpu: cpu.user + cpu.system });
});
const server = createServer(direct.serve(app)).listen(0, '127.0.0.1', () => {
  console.log(`PORT ${(server.address() as AddressInfo).port}`);
});
process.on('SIGTERM', () => {
  server.close();
  void closing().finally(() => process.exit(0));
  setTimeout(() => process.exit(0), 3000).unref();
});
