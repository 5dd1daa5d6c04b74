/**
 * A process stops whatever Redis is doing: with its Redis killed (SIGKILL: connections refused) or stopped
 * (SIGSTOP: connections open, nothing answered, as a hung or partitioned server), `node src/main.ts` still
 * exits after SIGTERM within its grace period (SHUTDOWN_GRACE_SECONDS: the process's own timer ends it with
 * code 1 and a line past that), and while Redis is away each connection logs its errors in one line, not one
 * per reconnection attempt.
 */
import { spawn } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { startRedis, stopAll, type Server } from './servers.js';

afterAll(stopAll);

const until = async (ok: () => boolean) => {
  while (!ok()) await new Promise((resolve) => setTimeout(resolve, 100));
};

/** The product as a process on the Redis `server`, its output gathered, listening. */
async function startProduct(server: Server) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: new URL('../../', import.meta.url).pathname,
    env: {
      PATH: process.env.PATH,
      PORT: '0',
      LOG_LEVEL: 'info',
      DATA_DIR: 'memory://',
      REDIS_URL: `redis://127.0.0.1:${server.port}`,
      SHUTDOWN_GRACE_SECONDS: '5',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const product = { child, output: '', exited: new Promise<number | null>((resolve) => child.on('exit', resolve)) };
  child.stdout.on('data', (chunk: Buffer) => (product.output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (product.output += chunk.toString()));
  await until(() => product.output.includes('listening on'));
  return product;
}

/** The port the product listens on, from its start line. */
const portOf = (output: string) => Number(/listening on http:\/\/localhost:(\d+)/.exec(output)![1]);

describe('a product whose Redis dies', () => {
  it('logs its Redis errors boundedly, and stops within its grace period on SIGTERM', async () => {
    const server = await startRedis(7063);
    const product = await startProduct(server);
    server.kill();
    // Every connection has failed to reconnect a few times (each attempt an error) before the stop.
    await until(() => (product.output.match(/redis: error, reconnecting/g) ?? []).length >= 5);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    product.child.kill('SIGTERM');
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

describe('a product whose Redis hangs', () => {
  it('stops within its grace period on SIGTERM while its Redis answers nothing, a dial waiting on it', async () => {
    const server = await startRedis(7064);
    const product = await startProduct(server);
    // Stopped, not dead: every connection stays open and every command waits for an answer that never comes.
    server.process.kill('SIGSTOP');
    try {
      const dial = fetch(`http://127.0.0.1:${portOf(product.output)}/ussd/africastalking`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          sessionId: 'hung-1',
          phoneNumber: '+256700444001',
          serviceCode: '*384#',
          text: '',
        }),
      }).then(
        (res) => res.status,
        () => 'no answer',
      );
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      product.child.kill('SIGTERM');
      const code = await product.exited;
      expect(product.output).toMatch(/shutting down/);
      expect([0, 1]).toContain(code);
      if (code === 1) expect(product.output).toMatch(/grace period over/);
      // The dial got an answer or its connection closed with the process: it does not hold the stop.
      expect([200, 'no answer']).toContain(await dial);
    } finally {
      server.process.kill('SIGCONT');
    }
  }, 120_000);
});
