/**
 * Child process of the notifications benchmark: `tsx bench/notify/serve.ts <ours|bare>` serves
 * POST /notifications/momo on a free port and prints `PORT <n>`; GET /__stats answers the deliveries received
 * and the notifier calls made so far and the process's own CPU time.
 *
 * ours: the product's notifications (src/notifications createNotifications): receiver (zod), memory queue,
 * dispatcher with its order mark and dedup mark in Redis (RedisStore, prefix bench:notify:), words, and a
 * notifier that counts its calls.
 * bare: an express route that only answers 200.
 */
import express from 'express';
import type { AddressInfo } from 'node:net';
import { RedisStore } from '../../src/conversation/redis-store.js';
import { createLogger } from '../../src/log.js';
import { createNotifications } from '../../src/notifications/index.js';

export const NOTIFY_PREFIX = 'bench:notify:';
const kind = process.argv[2];
const app = express();
let notified = 0;
let received = 0;
app.use('/notifications/momo', (_req, _res, next) => {
  received++;
  next();
});
let closing: () => Promise<void> = async () => undefined;

if (kind === 'ours') {
  const store = new RedisStore({ url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', keyPrefix: NOTIFY_PREFIX });
  const notifications = createNotifications({
    store,
    notifiers: {
      telegram: {
        send: async () => {
          notified++;
        },
      },
    },
    verify: { default: 'accept' },
    logger: createLogger('silent'),
  });
  notifications.start();
  app.use(notifications.router);
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

app.get('/__stats', (_req, res) => {
  const cpu = process.cpuUsage();
  res.json({ received, notified, cpu: cpu.user + cpu.system });
});
const server = app.listen(0, '127.0.0.1', () => {
  console.log(`PORT ${(server.address() as AddressInfo).port}`);
});
process.on('SIGTERM', () => {
  server.close();
  void closing().finally(() => process.exit(0));
  setTimeout(() => process.exit(0), 2000).unref();
});
