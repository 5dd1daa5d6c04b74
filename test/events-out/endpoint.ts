/**
 * A receiver of events out for the tests: a real HTTP server on a free port that records every request (raw
 * body, signature header) and answers as the test says: 500 while `down`, held without an answer while
 * `hanging` (until `release`), else 200.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  raw: string;
  signature: string | undefined;
  answered: number | 'held';
}

export interface Endpoint {
  url: string;
  received: Received[];
  /** Answer 500 while true. */
  down: boolean;
  /** Hold every request without an answer while true. */
  hanging: boolean;
  /** Requests held now. */
  held(): number;
  /** Answers 200 to every request held. */
  release(): void;
  close(): Promise<void>;
}

export async function startEndpoint(path = '/hook'): Promise<Endpoint> {
  const holding = new Map<ServerResponse, Received>();
  const endpoint: Endpoint = {
    url: '',
    received: [],
    down: false,
    hanging: false,
    held: () => holding.size,
    release() {
      for (const [res, entry] of holding) {
        entry.answered = 200;
        res.writeHead(200).end('ok');
      }
      holding.clear();
    },
    close: () =>
      new Promise((resolve) => {
        endpoint.release();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const entry: Received = {
        raw: Buffer.concat(chunks).toString('utf8'),
        signature: req.headers['momo-signature'] as string | undefined,
        answered: 200,
      };
      endpoint.received.push(entry);
      if (endpoint.hanging) {
        entry.answered = 'held';
        holding.set(res, entry);
        res.on('close', () => holding.delete(res));
        return;
      }
      entry.answered = endpoint.down ? 500 : 200;
      res.writeHead(entry.answered).end(endpoint.down ? 'down' : 'ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`;
  return endpoint;
}
