import express from 'express';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { addGatewayRoute, addressMatcher, isServed } from '../../../adapters/ussd/access.js';
import { DirectRoutes } from '../../../src/http/direct-routes.js';

describe('addressMatcher', () => {
  it('matches IPv4 and IPv6 ranges and bare addresses, an IPv4 caller on a dual-stack socket as IPv4', () => {
    const allowed = addressMatcher(['196.201.214.0/23', '2c0f:fe38::/32', '10.1.2.3', '::1']);
    for (const address of [
      '196.201.214.1',
      '196.201.215.254',
      '::ffff:196.201.214.9',
      '2c0f:fe38:1::5',
      '10.1.2.3',
      '::1',
    ])
      expect(allowed(address), address).toBe(true);
    for (const address of [
      '196.201.216.1',
      '10.1.2.4',
      '2c0f:fe39::1',
      '127.0.0.1',
      '',
      undefined,
      'not-an-ip',
      '::ffff:10.1.2.4',
    ])
      expect(allowed(address), String(address)).toBe(false);
  });
});

describe('addGatewayRoute', () => {
  const TOKEN = 'a-token-of-16-chars';

  /** The statuses of POSTs to the bare path, the token path and a wrong token, with `access`; express answers 404 for what no route takes. */
  async function served(access: Parameters<typeof addGatewayRoute>[1]): Promise<Record<string, number>> {
    const direct = new DirectRoutes();
    addGatewayRoute(
      direct,
      access,
      '/ussd/x',
      () => undefined,
      (_req, res) => void res.writeHead(200).end(),
    );
    const app = express();
    const server = createServer(direct.serve(app)).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const status = async (path: string) => (await fetch(url + path, { method: 'POST' })).status;
      return {
        bare: await status('/ussd/x'),
        token: await status(`/ussd/x/${TOKEN}`),
        wrong: await status('/ussd/x/not-the-token-at-all'),
      };
    } finally {
      server.close();
    }
  }

  it('serves the token route in production, the bare path only with the demo or an allow-list alone, and nothing with neither', async () => {
    expect(await served({ open: false, token: TOKEN })).toEqual({ bare: 404, token: 200, wrong: 404 });
    // The allow-list alone: the bare path, to callers in it (the test's loopback is not in 10/8).
    expect(await served({ open: false, allowedIps: ['10.0.0.0/8'] })).toEqual({ bare: 403, token: 404, wrong: 404 });
    expect(await served({ open: false, allowedIps: ['127.0.0.1'] })).toEqual({ bare: 200, token: 404, wrong: 404 });
    expect(await served({ open: false, token: TOKEN, allowedIps: ['127.0.0.1'] })).toEqual({
      bare: 404,
      token: 200,
      wrong: 404,
    });
    expect(await served({ open: false, token: TOKEN, allowedIps: ['10.0.0.0/8'] })).toEqual({
      bare: 404,
      token: 403,
      wrong: 404,
    });
    expect(await served({ open: true, token: TOKEN })).toEqual({ bare: 200, token: 200, wrong: 404 });
    expect(await served({ open: false })).toEqual({ bare: 404, token: 404, wrong: 404 });
    expect(isServed({ open: false })).toBe(false);
  });
});
