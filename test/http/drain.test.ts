/**
 * A request answered before its body was read to the end must not wedge its keep-alive connection: the next
 * request on the same socket is answered (src/http/body.ts drainUnreadBodies, on the product's app).
 */
import express from 'express';
import { Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import getRawBody from 'raw-body';
import { afterEach, describe, expect, it } from 'vitest';
import { drainUnreadBodies } from '../../src/http/body.js';

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

/** An app whose route stops reading at 1 kB and answers 413, as Bolt's body limit does. */
async function serve(drain: boolean): Promise<string> {
  const app = express();
  if (drain) app.use(drainUnreadBodies);
  app.post('/limited', (req, res) => {
    getRawBody(req, { limit: 1024 }, (err) => {
      if (err) res.status(413).type('text/plain').send('too large');
      else res.type('text/plain').send('ok');
    });
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Two requests on one keep-alive socket: a large body, then a small one; each answer, or 'hung' after 2 s. */
async function twoOnOneSocket(url: string): Promise<string[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const post = (body: string) =>
    new Promise<string>((resolve) => {
      // timer-ok: a bound, not a wait: the answer ends it; past it the request is named 'hung'.
      const timer = setTimeout(() => resolve('hung'), 2000);
      const req = request(
        `${url}/limited`,
        { method: 'POST', agent, headers: { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body) } },
        (res) => {
          res.resume();
          res.on('end', () => {
            clearTimeout(timer);
            resolve(String(res.statusCode));
          });
        },
      );
      req.on('error', () => resolve('error'));
      req.end(body);
    });
  try {
    return await Promise.all([post('x'.repeat(300_000)), post('small')]);
  } finally {
    agent.destroy();
  }
}

describe('bodies answered before they were read', () => {
  it('leave the connection able to carry the next request', async () => {
    expect(await twoOnOneSocket(await serve(true))).toEqual(['413', '200']);
  });

  it('wedge it without the drain (what the fuzz run found)', async () => {
    expect(await twoOnOneSocket(await serve(false))).toEqual(['413', 'hung']);
  });
});
