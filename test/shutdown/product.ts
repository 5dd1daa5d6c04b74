/**
 * The product as a process of its own (`node dist/src/main.js`, test/product.ts), as an operator runs it, and what the
 * process tests put around it: a standalone sandbox behind a proxy that can hold payment creations back, and
 * the product's keys in Redis, under a prefix of the test's own, deleted before and after.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import http, { type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Redis } from 'ioredis';
import { createLogger } from '../../src/log.js';
import { queuePrefixesOf } from '../../src/store/keys.js';
import { createSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { forward, readAll } from '../chaos/proxies.js';
import { productArgs, ROOT } from '../product.js';
import { productDatabase, serverDatabase, type ServerDatabase } from '../journal/server-database.js';

export interface ProductProcess {
  child: ChildProcess;
  /** http://127.0.0.1:<port>, once it listens. */
  url: string;
  /** Resolves with the exit code (null when killed by a signal). */
  exit: Promise<number | null>;
  output(): string;
}

let database: Promise<ServerDatabase> | undefined;

/**
 * The PostgreSQL database the product processes of one test file share (a production start needs
 * DATABASE_URL: PGlite is the demo's); created on first use, dropped by {@link dropSharedDatabase}.
 */
export function sharedDatabase(): Promise<ServerDatabase> {
  return (database ??= serverDatabase('product'));
}

/** Drops the database of {@link sharedDatabase}, if one was made. */
export async function dropSharedDatabase(): Promise<void> {
  const made = database;
  database = undefined;
  await (await made)?.drop();
}

/**
 * Starts the product with `env` (and PATH, PORT 0) and resolves once it listens. Without DATABASE_URL its
 * journal is a database of its own on the test server (a copy of the run's template: a start on an embedded
 * PGlite costs the process three times the CPU), or, in production mode, the file's {@link sharedDatabase};
 * another build's an in-memory PGlite. `root` is the folder holding its src/ (default: this repository, run from
 * its dist/; another build's copy for a test of two releases).
 */
export async function startProductProcess(env: Record<string, string>, root = ROOT): Promise<ProductProcess> {
  let output = '';
  const journal = env.DATABASE_URL
    ? {}
    : env.MOMO_BASE_URL
      ? { DATABASE_URL: (await sharedDatabase()).url }
      : root === ROOT
        ? await productDatabase()
        : // The run's migrated template is of this repository's migrations, which another build may not know.
          { DATA_DIR: 'memory://' };
  // Another build's copy has no dist/ of its own: tsx compiles its sources as it starts (cheaper than a build
  // for the few starts of it a test makes).
  const args = root === ROOT ? productArgs() : ['--import', 'tsx', 'src/main.ts'];
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      PORT: '0',
      ...journal,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    // timer-ok: a bound, not a wait: the line saying it listens ends it.
    const timer = setTimeout(() => reject(new Error(`the product did not start: ${output}`)), 30_000);
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      const m = /listening on http:\/\/localhost:(\d+)/.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: `http://127.0.0.1:${m[1]}`, exit, output: () => output });
      }
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    void exit.then(() => reject(new Error(`the product exited before listening: ${output}`)));
  });
}

/**
 * A key prefix (REDIS_KEY_PREFIX) no other test uses: `test:<name>:<uuid>:`. A test giving it to the products
 * it starts on the shared test database deletes only their keys with {@link cleanProductKeys}.
 */
export const productKeyPrefix = (name: string): string => `test:${name}:${randomUUID()}:`;

/**
 * Deletes the keys of the products started with REDIS_KEY_PREFIX `prefix` from the database of `redis`: those
 * under the prefix and their queues' (whose tags carry its name: keys.ts queuePrefixesOf). Nobody else's.
 */
export async function cleanProductKeys(redis: Redis, prefix: string): Promise<void> {
  for (const pattern of [
    `${prefix}*`,
    ...queuePrefixesOf(prefix)
      .all()
      .map((queues) => `${queues}:*`),
  ]) {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  }
}

export interface Service {
  sandbox: Sandbox;
  /** The proxy's address: the product's MOMO_BASE_URL. */
  url: string;
  close(): Promise<void>;
}

const listen = (server: Server): Promise<number> =>
  new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));

const closeServer = (server: Server) => {
  server.closeAllConnections();
  return new Promise<void>((resolve) => server.close(() => resolve()));
};

/** What {@link startService} holds, and who hears the service's answers to what it held. */
export interface ServiceHolds {
  /** The POSTs held (default a payment's creation). */
  held?: (req: IncomingMessage) => boolean;
  /** The service's status for each held POST (whether or not its caller is still there to read it). */
  answered?: (status: number, req: IncomingMessage) => void;
}

/** A payment's creation: what {@link startService} holds unless told otherwise. */
const paymentCreation = (req: IncomingMessage): boolean => req.url?.startsWith('/api/payments') ?? false;

/**
 * A standalone sandbox (`apiKey`) behind a proxy; each creation `held` names (POSTs only; default a payment's)
 * waits for `hold(request, body)` before it is forwarded (a promise that never settles: it never reaches the
 * service).
 */
export async function startService(
  apiKey: string,
  hold: (req: IncomingMessage, body: Buffer) => Promise<void>,
  { held = paymentCreation, answered }: ServiceHolds = {},
): Promise<Service> {
  const sandbox = createSandbox({
    apiKey,
    allowHttpWebhooks: true,
    limits: { readsPerMinute: 10_000 },
    logger: createLogger('silent'),
  });
  const sandboxServer = http.createServer(sandbox.app);
  const sandboxPort = await listen(sandboxServer);
  const proxy = http.createServer((req, res) => {
    void (async () => {
      const body = await readAll(req);
      const creation = req.method === 'POST' && held(req);
      if (creation) await hold(req, body);
      try {
        const answer = await forward(sandboxPort, req, body);
        if (creation) answered?.(answer.status, req);
        const headers = { ...answer.headers };
        delete headers['transfer-encoding'];
        delete headers.connection;
        res.writeHead(answer.status, headers).end(answer.body);
      } catch {
        res.socket?.destroy();
      }
    })();
  });
  const port = await listen(proxy);
  return {
    sandbox,
    url: `http://127.0.0.1:${port}`,
    async close() {
      await closeServer(proxy);
      await closeServer(sandboxServer);
      await sandbox.close();
    },
  };
}
