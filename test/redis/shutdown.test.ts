/**
 * A process stops whatever Redis is doing: with its Redis killed (SIGKILL: connections refused) or stopped
 * (SIGSTOP: connections open, nothing answered, as a hung or partitioned server), `node dist/src/main.js` still
 * exits after SIGTERM within its grace period (SHUTDOWN_GRACE_SECONDS: the process's own timer ends it with
 * code 1 and a line past that), and while Redis is away each connection logs its errors in one line, not one
 * per reconnection attempt. With every server hung (one server, a three-master cluster, a Sentinel set) the
 * stop itself ends in time, each step bounded (app.ts stop): exit code 0, not the grace timer's 1.
 */
import { spawn } from 'node:child_process';
import { productArgs, ROOT } from '../product.js';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { afterAll, describe, it } from 'vitest';
import { freePorts } from '../ports.js';
import { startCluster, startOwnRedis, startSentinelSet, stopAll, type Server } from './servers.js';
import { until } from '../until.js';
import { productDatabase } from '../journal/server-database.js';

/** Within the test's own timeout, asked every 100 ms. */
const WAIT = { timeoutMs: 60_000, everyMs: 100 };

afterAll(stopAll);

/** The product as a process on the Redis `server` (or the settings `redis`), its output gathered, listening. */
async function startProduct(server: Server | Record<string, string>, graceSeconds = 5) {
  const child = spawn(process.execPath, productArgs(), {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      PORT: '0',
      LOG_LEVEL: 'info',
      ...(await productDatabase()),
      ...('port' in server ? { REDIS_URL: `redis://127.0.0.1:${server.port}` } : server),
      SHUTDOWN_GRACE_SECONDS: String(graceSeconds),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const product = { child, output: '', exited: new Promise<number | null>((resolve) => child.on('exit', resolve)) };
  child.stdout.on('data', (chunk: Buffer) => (product.output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (product.output += chunk.toString()));
  await until('the product listening', () => product.output.includes('listening on'), WAIT);
  return product;
}

/** The port the product listens on, from its start line. */
const portOf = (output: string) => Number(/listening on http:\/\/localhost:(\d+)/.exec(output)![1]);

// Each case starts servers and a product of its own and spends its time waiting on their stop: they run at once.
describe.concurrent('a product whose Redis dies', () => {
  it('logs its Redis errors boundedly, and stops within its grace period on SIGTERM', async ({ expect }) => {
    const server = await startOwnRedis();
    const product = await startProduct(server);
    server.kill();
    await until(
      'five reconnections said',
      () => (product.output.match(/redis: error, reconnecting/g) ?? []).length >= 5,
      WAIT,
    );
    // Every connection fails to reconnect again and again (each attempt reset: an error) before the stop.
    let attempts = 0;
    const resetting = createServer((socket) => {
      attempts += 1;
      socket.resetAndDestroy();
    });
    await new Promise<void>((resolve) => resetting.listen(server.port, '127.0.0.1', resolve));
    await until('30 attempts', () => attempts >= 30, WAIT);
    product.child.kill('SIGTERM');
    resetting.close();
    const code = await product.exited;
    expect([0, 1]).toContain(code);
    if (code === 1) expect(product.output).toMatch(/grace period over/);

    const errors = product.output
      .split('\n')
      .filter((line) => /redis: error, reconnecting|queue worker error/.test(line))
      .map((line) => JSON.parse(line) as { redis?: string; queue?: string });
    const perSource = new Map<string, number>();
    for (const e of errors)
      perSource.set(e.redis ?? `worker ${e.queue}`, (perSource.get(e.redis ?? `worker ${e.queue}`) ?? 0) + 1);
    // One line per connection at most in the first 30 s however many attempts failed: a queue has two
    // connections (its own and its worker's), every other part one.
    for (const [source, n] of perSource) expect(n, source).toBeLessThanOrEqual(source.startsWith('queue ') ? 2 : 1);
  }, 120_000);
});

/** Every server of the set stopped (SIGSTOP): connections open, nothing answered. */
const hang = (servers: Server[]) => servers.forEach((server) => server.process.kill('SIGSTOP'));
const resume = (servers: Server[]) => servers.forEach((server) => server.process.kill('SIGCONT'));

/**
 * The grace of the hung cases: its stop holds the hops in flight to 60% of it, the journal to 85%, the store to
 * 95% (app.ts stop), so each case waits most of it; short, as the first case's.
 */
const GRACE_SECONDS = 5;

/** The Redis set-ups, each started on its own ports: its servers and the product's settings. */
const setups: Array<[string, () => Promise<{ servers: Server[]; env: Record<string, string> }>]> = [
  [
    'one server',
    async () => {
      const server = await startOwnRedis();
      return { servers: [server], env: { REDIS_URL: `redis://127.0.0.1:${server.port}` } };
    },
  ],
  [
    'a three-master cluster',
    async () => {
      const ports = await freePorts(3, { bus: true });
      const servers = await startCluster(ports);
      return { servers, env: { REDIS_CLUSTER_NODES: ports.map((port) => `127.0.0.1:${port}`).join(',') } };
    },
  ],
  [
    'a master, its replica and three Sentinels',
    async () => {
      const [master, replica, ...sentinels] = (await freePorts(5)) as [number, number, ...number[]];
      const set = await startSentinelSet('hung', master, replica, sentinels);
      return {
        servers: [set.master, set.replica, ...set.sentinels],
        env: { REDIS_SENTINELS: sentinels.map((port) => `127.0.0.1:${port}`).join(','), REDIS_SENTINEL_NAME: 'hung' },
      };
    },
  ],
];

describe.concurrent.each(setups)('a product whose Redis hangs (%s)', (_name, setup) => {
  it('stops by its own bounded stop on SIGTERM while nothing answers, a dial waiting on it', async ({ expect }) => {
    const { servers, env } = await setup();
    const product = await startProduct(env, GRACE_SECONDS);
    hang(servers);
    try {
      // A dial sent whole to the product (its last byte written) before the stop.
      const body = new URLSearchParams({
        sessionId: 'hung-1',
        phoneNumber: '+256700444001',
        serviceCode: '*384#',
        text: '',
      }).toString();
      let sent = false;
      const dial = new Promise<number | 'no answer'>((resolve) => {
        const req = request(`http://127.0.0.1:${portOf(product.output)}/ussd/africastalking`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        });
        req.on('response', (res) => {
          res.resume();
          resolve(res.statusCode!);
        });
        req.on('error', () => resolve('no answer'));
        req.on('finish', () => (sent = true));
        req.end(body);
      });
      await until('the dial written', () => sent, WAIT);
      product.child.kill('SIGTERM');
      const code = await product.exited;
      expect(product.output).toMatch(/shutting down/);
      // Its own stop ended it (each step bounded) before the grace timer's exit with work unfinished.
      expect(product.output).not.toMatch(/grace period over/);
      expect(code).toBe(0);
      // The dial got an answer or its connection closed with the process: it does not hold the stop.
      expect([200, 'no answer']).toContain(await dial);
    } finally {
      resume(servers);
    }
  }, 120_000);
});
