/**
 * A real local HTTP server (port 0) that answers from a queue of scripted responses and records every
 * request it receives. No request mocking: the client speaks real HTTP to it.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ScriptedResponse {
  /** Default 200. */
  status?: number;
  headers?: Record<string, string>;
  /** An object is sent as JSON; a string as it is. */
  body?: unknown;
  /** Drop the connection without answering (a network failure). */
  drop?: boolean;
  /** Never answer (a timeout); the socket is closed when the server closes. */
  hang?: boolean;
}

export interface RecordedRequest {
  method: string;
  /** Path and query, as received. */
  url: string;
  headers: IncomingHttpHeaders;
  /** Parsed JSON, or undefined when there was no body. */
  body: unknown;
}

export class ScriptedServer {
  readonly requests: RecordedRequest[] = [];
  private readonly queue: ScriptedResponse[] = [];

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<ScriptedServer> {
    let self: ScriptedServer | undefined;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        self!.requests.push({
          method: req.method ?? '',
          url: req.url ?? '',
          headers: req.headers,
          body: text === '' ? undefined : (JSON.parse(text) as unknown),
        });
        const next = self!.queue.shift() ?? { status: 599, body: { detail: 'no scripted response left' } };
        if (next.drop) {
          req.socket.destroy();
          return;
        }
        if (next.hang) return;
        const isText = typeof next.body === 'string';
        res.writeHead(next.status ?? 200, {
          'content-type': isText ? 'text/plain' : 'application/json',
          ...next.headers,
        });
        res.end(next.body === undefined ? '' : isText ? (next.body as string) : JSON.stringify(next.body));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    self = new ScriptedServer(server, `http://127.0.0.1:${port}`);
    return self;
  }

  /** Queues answers, served in order, one per request. */
  reply(...responses: ScriptedResponse[]): this {
    this.queue.push(...responses);
    return this;
  }

  /** Forgets requests and unanswered scripts: call before each test. */
  reset(): void {
    this.requests.length = 0;
    this.queue.length = 0;
  }

  /** Requests received, as recorded; `header` reads one header of each. */
  header(name: string): Array<string | undefined> {
    return this.requests.map((r) => {
      const value = r.headers[name.toLowerCase()];
      return Array.isArray(value) ? value.join(', ') : value;
    });
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve, reject) => this.server.close((e) => (e ? reject(e) : resolve())));
  }
}
