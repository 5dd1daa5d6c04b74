import express from 'express';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { DirectRoutes, sendJson, type TrustProxy } from '../../src/http/direct-routes.js';

let server: Server | undefined;
afterEach(() => {
  server?.closeAllConnections();
  server?.close();
  server = undefined;
});

/** Serves `direct` in front of an express app that answers everything else `express <method> <url>`. */
async function serve(direct: DirectRoutes): Promise<string> {
  const app = express();
  app.use((req, res) => void res.status(404).send(`express ${req.method} ${req.url}`));
  server = createServer(direct.serve(app)).listen(0, '127.0.0.1');
  await new Promise((resolve) => server!.once('listening', resolve));
  return `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
}

const post = async (url: string, init: RequestInit = {}) => {
  const res = await fetch(url, { method: 'POST', ...init });
  return { status: res.status, body: await res.text() };
};

describe('DirectRoutes', () => {
  it('takes POSTs to its paths as express would match them, and leaves everything else to the app untouched', async () => {
    const direct = new DirectRoutes();
    direct.post('/ussd/at', {}, (_req, res) => void res.writeHead(200).end('direct'));
    const url = await serve(direct);
    for (const path of ['/ussd/at', '/USSD/At', '/ussd/at/', '/ussd/at?x=1'])
      expect(await post(url + path), path).toEqual({ status: 200, body: 'direct' });
    expect(await post(`${url}/ussd/at/more`)).toEqual({ status: 404, body: 'express POST /ussd/at/more' });
    expect(await post(`${url}/ussd/a`)).toEqual({ status: 404, body: 'express POST /ussd/a' });
    const get = await fetch(`${url}/ussd/at`);
    expect([get.status, await get.text()]).toEqual([404, 'express GET /ussd/at']);
  });

  it('serves a secret route only with its secret as the last segment (as sent, decoded); any other goes to the app', async () => {
    const direct = new DirectRoutes();
    direct.post('/ussd/at', { secret: 'Tok+en/16-chars!' }, (_req, res) => void res.writeHead(200).end('direct'));
    const url = await serve(direct);
    expect(await post(`${url}/ussd/at/${encodeURIComponent('Tok+en/16-chars!')}`)).toEqual({
      status: 200,
      body: 'direct',
    });
    expect((await post(`${url}/ussd/at/${encodeURIComponent('tok+en/16-chars!')}`)).body).toMatch(/^express/);
    expect((await post(`${url}/ussd/at`)).body).toMatch(/^express/);
    expect((await post(`${url}/ussd/at/%E0%A4%A`)).body).toMatch(/^express/);
  });

  it('runs use() handlers first, whenever added, and sends next(err), throws and rejections to the error handler', async () => {
    const direct = new DirectRoutes();
    const seen: string[] = [];
    const onError = (err: unknown, _req: unknown, res: import('node:http').ServerResponse) =>
      sendJson(res, 418, { error: String((err as Error).message) });
    direct.post('/next', { onError }, (_req, _res, next) => next(new Error('passed')));
    direct.post('/throw', { onError }, () => {
      throw new Error('thrown');
    });
    direct.post('/reject', { onError }, async () => Promise.reject(new Error('rejected')));
    direct.post('/default', {}, () => {
      throw new Error('secret detail');
    });
    direct.use((req, _res, next) => {
      seen.push(`before ${req.url}`);
      next();
    });
    const url = await serve(direct);
    expect(await post(`${url}/next`)).toEqual({ status: 418, body: '{"error":"passed"}' });
    expect(await post(`${url}/throw`)).toEqual({ status: 418, body: '{"error":"thrown"}' });
    expect(await post(`${url}/reject`)).toEqual({ status: 418, body: '{"error":"rejected"}' });
    expect(await post(`${url}/default`)).toEqual({ status: 500, body: '{"error":"internal error"}' });
    expect(seen).toEqual(['before /next', 'before /throw', 'before /reject', 'before /default']);
  });

  it("gives the caller's address as express's req.ip does: X-Forwarded-For believed only through the trusted hops", async () => {
    const ipOf = async (trust: TrustProxy, forwarded?: string) => {
      const direct = new DirectRoutes(trust);
      direct.post('/ip', {}, (req, res) => void res.writeHead(200).end(direct.ip(req)));
      const url = await serve(direct);
      try {
        return (await post(`${url}/ip`, forwarded ? { headers: { 'x-forwarded-for': forwarded } } : {})).body;
      } finally {
        server!.close();
      }
    };
    expect(await ipOf(false, '203.0.113.9')).toBe('127.0.0.1');
    expect(await ipOf(1, '198.51.100.1, 203.0.113.9')).toBe('203.0.113.9');
    expect(await ipOf(2, '198.51.100.1, 203.0.113.9')).toBe('198.51.100.1');
    expect(await ipOf(['loopback'], '198.51.100.1, 203.0.113.9')).toBe('203.0.113.9');
    expect(await ipOf(['10.0.0.0/8'], '203.0.113.9')).toBe('127.0.0.1');
  });
});
