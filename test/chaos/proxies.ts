/**
 * The chaos run's HTTP pieces, all on 127.0.0.1:
 * - FaultProxy: between each product instance's service client and the sandbox (one port per instance, so
 *   it knows who sent a call). On chosen calls it answers 5xx without forwarding, forwards (the sandbox
 *   commits) and drops or replaces the answer, kills the instance that sent a payment (before the service
 *   saw it, after it committed, or right after relaying its answer), or has Redis refuse writes just as the
 *   service's acceptance goes back.
 * - Balancer: the load balancer the service's webhooks go to (PUBLIC_URL), spreading them over live instances.
 * The Redis proxy is redis-proxy.ts; the Telegram Bot API bot-api.ts.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

const listen = (server: http.Server): Promise<number> =>
  new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
  });

const closeServer = (server: http.Server): Promise<void> =>
  new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

export type Fault =
  | 'none'
  /** 503 without forwarding: nothing happened at the service. */
  | '5xx'
  /** Forwarded (the sandbox commits), then the connection drops: the answer is lost. */
  | 'drop-after-commit'
  /** The same, 3.5 s later: past the USSD deadline. */
  | 'slow-drop-after-commit'
  /** Forwarded, then 502 instead of the answer. */
  | '5xx-after-commit'
  /** Held, the sending instance killed (SIGKILL); never forwarded: the service never saw it. */
  | 'kill-before-commit'
  /** Forwarded (the sandbox commits), the sending instance killed before the answer is relayed. */
  | 'kill-after-commit'
  /** Forwarded and answered, the sending instance killed right after: between the answer and the record's write. */
  | 'kill-after-answer'
  /** Forwarded; on a 2xx, Redis refuses writes for a moment, then the answer is relayed. */
  | 'redis-refuses-after-commit';

export const FAULTS: Exclude<Fault, 'none'>[] = [
  '5xx',
  'drop-after-commit',
  'slow-drop-after-commit',
  '5xx-after-commit',
  'kill-before-commit',
  'kill-after-commit',
  'kill-after-answer',
  'redis-refuses-after-commit',
];

/** One call the proxy saw (payment creates only: what a failed conversation's diagnosis needs). */
export interface ServiceCall {
  at: number;
  instance: string;
  /** metadata.chat and the Duplicate-Check-Key of the payment. */
  chat?: string;
  key?: string;
  fault: Fault;
  /** The sandbox's status, when it answered. */
  status?: number;
}

export interface FaultProxyOptions {
  /** The sandbox. */
  targetPort: number;
  /** The fault of one call: the instance that sent it, its method, path (without query) and body. */
  choose(call: { instance: string; method: string; path: string; body: Buffer }): Fault;
  /** Kills an instance with SIGKILL (the kill faults). */
  kill(instance: string): void;
  /** Has Redis refuse writes for a moment (redis-refuses-after-commit). */
  refuseRedisWrites(): void;
  /** Milliseconds between relaying an answer and killing its instance (kill-after-answer). Default 0. */
  killDelayMs?: () => number;
  /** How long slow-drop-after-commit holds the answer. Default 3500 (past the USSD deadline of 3 s). */
  slowMs?: number;
}

export class FaultProxy {
  private readonly servers = new Map<string, http.Server>();
  readonly counts = Object.fromEntries(FAULTS.map((f) => [f, 0])) as Record<Exclude<Fault, 'none'>, number>;
  requests = 0;
  /** Every POST /api/payments, in order. */
  readonly paymentCalls: ServiceCall[] = [];

  constructor(private readonly options: FaultProxyOptions) {}

  /** Opens the port `instance` sends its service calls to (its MOMO_BASE_URL). */
  async listenFor(instance: string): Promise<number> {
    // A request its instance abandoned mid-body (killed) rejects in readAll: its connection is gone anyway.
    const server = http.createServer((req, res) => {
      this.handle(instance, req, res).catch(() => res.destroy());
    });
    server.keepAliveTimeout = 1000;
    this.servers.set(instance, server);
    return listen(server);
  }

  /** Closes an instance's port (it is gone). */
  async forget(instance: string): Promise<void> {
    const server = this.servers.get(instance);
    this.servers.delete(instance);
    if (server) await closeServer(server);
  }

  private async handle(instance: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.requests++;
    const body = await readAll(req);
    const method = req.method ?? 'GET';
    const path = (req.url ?? '').split('?')[0]!;
    const fault = this.options.choose({ instance, method, path, body });
    if (fault !== 'none') this.counts[fault]++;
    let call: ServiceCall | undefined;
    if (method === 'POST' && path === '/api/payments') {
      call = {
        at: Date.now(),
        instance,
        fault,
        key: req.headers['duplicate-check-key'] as string | undefined,
        chat: chatOf(body),
      };
      this.paymentCalls.push(call);
    }
    const hangUp = () => void res.socket?.destroy();
    if (fault === '5xx') {
      res
        .writeHead(503, { 'content-type': 'application/json' })
        .end(JSON.stringify({ detail: 'Service unavailable (chaos).' }));
      return;
    }
    if (fault === 'kill-before-commit') {
      this.options.kill(instance);
      hangUp();
      return;
    }
    let answer: { status: number; headers: http.IncomingHttpHeaders; body: Buffer };
    try {
      answer = await forward(this.options.targetPort, req, body);
    } catch {
      hangUp();
      return;
    }
    if (call) call.status = answer.status;
    switch (fault) {
      case 'drop-after-commit':
        return hangUp();
      case 'slow-drop-after-commit':
        setTimeout(hangUp, this.options.slowMs ?? 3500); // timer-ok: a slow hang-up is the fault itself
        return;
      case '5xx-after-commit':
        res
          .writeHead(502, { 'content-type': 'application/json' })
          .end(JSON.stringify({ detail: 'Bad gateway (chaos).' }));
        return;
      case 'kill-after-commit':
        this.options.kill(instance);
        return hangUp();
      case 'redis-refuses-after-commit':
        if (answer.status < 300) this.options.refuseRedisWrites();
        break;
      default:
    }
    const headers = { ...answer.headers };
    delete headers['transfer-encoding'];
    delete headers.connection;
    delete headers['keep-alive'];
    res.writeHead(answer.status, headers).end(answer.body, () => {
      if (fault !== 'kill-after-answer') return;
      const delay = this.options.killDelayMs?.() ?? 0;
      // timer-ok: the fault's own timing: a kill this long after the answer left.
      if (delay > 0) setTimeout(() => this.options.kill(instance), delay);
      else this.options.kill(instance);
    });
  }

  async close(): Promise<void> {
    await Promise.all([...this.servers.keys()].map((instance) => this.forget(instance)));
  }
}

function chatOf(body: Buffer): string | undefined {
  try {
    const chat = (JSON.parse(body.toString()) as { metadata?: { chat?: unknown } }).metadata?.chat;
    return typeof chat === 'string' ? chat : undefined;
  } catch {
    return undefined;
  }
}

/** Round-robin HTTP balancer over the instances `targets()` names; one that fails before answering is skipped. */
export class Balancer {
  private readonly server: http.Server;
  private next = 0;
  port = 0;

  constructor(private readonly targets: () => number[]) {
    this.server = http.createServer((req, res) => {
      this.handle(req, res).catch(() => res.destroy());
    });
  }

  async start(): Promise<this> {
    this.port = await listen(this.server);
    return this;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readAll(req);
    const ports = this.targets();
    for (let i = 0; i < ports.length; i++) {
      const port = ports[this.next++ % ports.length]!;
      try {
        const answer = await forward(port, req, body);
        res
          .writeHead(answer.status, { 'content-type': answer.headers['content-type'] ?? 'text/plain' })
          .end(answer.body);
        return;
      } catch {
        // Refused or reset before an answer: the next instance.
      }
    }
    res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: 'no instance up' }));
  }

  async close(): Promise<void> {
    await closeServer(this.server);
  }
}

export function readAll(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export function forward(
  port: number,
  req: IncomingMessage,
  body: Buffer,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const headers = { ...req.headers, host: `127.0.0.1:${port}`, 'content-length': String(body.length) };
    delete headers.connection;
    const out = http.request(
      { host: '127.0.0.1', port, method: req.method, path: req.url, headers, agent: false },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (c: Buffer) => chunks.push(c));
        answer.on('end', () =>
          resolve({ status: answer.statusCode ?? 502, headers: answer.headers, body: Buffer.concat(chunks) }),
        );
        answer.on('error', reject);
      },
    );
    out.setTimeout(20_000, () => out.destroy(new Error('upstream timeout')));
    out.on('error', reject);
    out.end(body);
  });
}
