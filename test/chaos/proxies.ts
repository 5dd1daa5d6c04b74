/**
 * The chaos run's network pieces, all on 127.0.0.1:
 * - TcpCutter: a TCP proxy in front of Redis whose connections can be cut and the port refused for a while.
 * - FaultProxy: an HTTP proxy between the product's service client and the sandbox that, on chosen requests,
 *   answers 5xx without forwarding, or forwards (the sandbox commits) and then drops the answer.
 * - Balancer: the load balancer the service's webhooks go to (PUBLIC_URL), spreading them over live instances.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';

const listen = (server: net.Server): Promise<number> =>
  new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
  });

const closeServer = (server: net.Server): Promise<void> => new Promise((resolve) => server.close(() => resolve()));

/** TCP proxy to `target`; cut() drops every connection and refuses new ones until restore(). */
export class TcpCutter {
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();
  private down = false;
  port = 0;
  cuts = 0;

  constructor(private readonly target: { host: string; port: number }) {
    this.server = net.createServer((client) => {
      if (this.down) {
        client.destroy();
        return;
      }
      const upstream = net.connect(this.target.port, this.target.host);
      this.sockets.add(client);
      this.sockets.add(upstream);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      client.pipe(upstream);
      upstream.on('data', (chunk: Buffer) => {
        if (this.swallowNextReply) {
          // The command reached Redis and ran; its reply is lost with the connection.
          this.swallowNextReply = false;
          drop();
          return;
        }
        client.write(chunk);
      });
    });
  }

  /** The next reply from Redis is not relayed: the connection drops instead (the command did run). */
  swallowNextReply = false;

  async start(): Promise<this> {
    this.port = await listen(this.server);
    return this;
  }

  cut(): void {
    this.cuts++;
    this.down = true;
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }

  restore(): void {
    this.down = false;
  }

  async close(): Promise<void> {
    this.cut();
    await closeServer(this.server);
  }
}

export type Fault = 'none' | '5xx' | 'drop-after-commit' | 'slow-drop-after-commit' | '5xx-after-commit';

export interface FaultCounts {
  requests: number;
  '5xx': number;
  'drop-after-commit': number;
  'slow-drop-after-commit': number;
  '5xx-after-commit': number;
}

/** HTTP proxy to the sandbox; `choose` picks the fault of each request. */
export class FaultProxy {
  private readonly server: http.Server;
  port = 0;
  readonly counts: FaultCounts = { requests: 0, '5xx': 0, 'drop-after-commit': 0, 'slow-drop-after-commit': 0, '5xx-after-commit': 0 };
  enabled = true;

  constructor(
    private readonly targetPort: number,
    private readonly choose: (method: string, path: string) => Fault,
    private readonly slowMs = 3500,
  ) {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    this.server.keepAliveTimeout = 1000;
  }

  async start(): Promise<this> {
    this.port = await listen(this.server);
    return this;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.counts.requests++;
    const fault = this.enabled ? this.choose(req.method ?? 'GET', (req.url ?? '').split('?')[0]!) : 'none';
    if (fault !== 'none') this.counts[fault]++;
    const body = await readAll(req);
    if (fault === '5xx') {
      res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: 'Service unavailable (chaos).' }));
      return;
    }
    let answer: { status: number; headers: http.IncomingHttpHeaders; body: Buffer };
    try {
      answer = await forward(this.targetPort, req, body);
    } catch {
      res.socket?.destroy();
      return;
    }
    if (fault === 'drop-after-commit') {
      res.socket?.destroy();
      return;
    }
    if (fault === 'slow-drop-after-commit') {
      setTimeout(() => res.socket?.destroy(), this.slowMs);
      return;
    }
    if (fault === '5xx-after-commit') {
      res.writeHead(502, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: 'Bad gateway (chaos).' }));
      return;
    }
    const headers = { ...answer.headers };
    delete headers['transfer-encoding'];
    delete headers.connection;
    delete headers['keep-alive'];
    res.writeHead(answer.status, headers).end(answer.body);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await closeServer(this.server);
  }
}

/** Round-robin HTTP balancer over the instances `targets()` names; a refused instance is skipped. */
export class Balancer {
  private readonly server: http.Server;
  private next = 0;
  port = 0;

  constructor(private readonly targets: () => number[]) {
    this.server = http.createServer((req, res) => void this.handle(req, res));
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
        res.writeHead(answer.status, { 'content-type': answer.headers['content-type'] ?? 'text/plain' }).end(answer.body);
        return;
      } catch {
        // Refused or reset before an answer: the next instance.
      }
    }
    res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: 'no instance up' }));
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
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

export function forward(port: number, req: IncomingMessage, body: Buffer): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const headers = { ...req.headers, host: `127.0.0.1:${port}`, 'content-length': String(body.length) };
    delete headers.connection;
    const out = http.request({ host: '127.0.0.1', port, method: req.method, path: req.url, headers, agent: false }, (answer) => {
      const chunks: Buffer[] = [];
      answer.on('data', (c: Buffer) => chunks.push(c));
      answer.on('end', () => resolve({ status: answer.statusCode ?? 502, headers: answer.headers, body: Buffer.concat(chunks) }));
      answer.on('error', reject);
    });
    out.setTimeout(20_000, () => out.destroy(new Error('upstream timeout')));
    out.on('error', reject);
    out.end(body);
  });
}
