import express from 'express';
import { describe, expect, it } from 'vitest';
import { addGatewayRoute, addressMatcher, isServed } from '../../../adapters/ussd/access.js';

describe('addressMatcher', () => {
  it('matches IPv4 and IPv6 ranges and bare addresses, an IPv4 caller on a dual-stack socket as IPv4', () => {
    const allowed = addressMatcher(['196.201.214.0/23', '2c0f:fe38::/32', '10.1.2.3', '::1']);
    for (const address of ['196.201.214.1', '196.201.215.254', '::ffff:196.201.214.9', '2c0f:fe38:1::5', '10.1.2.3', '::1']) expect(allowed(address), address).toBe(true);
    for (const address of ['196.201.216.1', '10.1.2.4', '2c0f:fe39::1', '127.0.0.1', '', undefined, 'not-an-ip', '::ffff:10.1.2.4']) expect(allowed(address), String(address)).toBe(false);
  });
});

describe('addGatewayRoute', () => {
  /** The routes an app got, as `METHOD path`. */
  function routes(access: Parameters<typeof addGatewayRoute>[1]): string[] {
    const app = express();
    addGatewayRoute(app, access, '/ussd/x', (_req, res) => void res.end());
    const stack = (app as unknown as { router: { stack: Array<{ route?: { path: string } }> } }).router.stack;
    return stack.filter((layer) => layer.route).map((layer) => layer.route!.path);
  }

  it('serves the token route in production, the bare path only with the demo or an allow-list alone, and nothing with neither', () => {
    expect(routes({ open: false, token: 'a-token-of-16-chars' })).toEqual(['/ussd/x/:callbackToken']);
    expect(routes({ open: false, allowedIps: ['10.0.0.0/8'] })).toEqual(['/ussd/x']);
    expect(routes({ open: false, token: 'a-token-of-16-chars', allowedIps: ['10.0.0.0/8'] })).toEqual(['/ussd/x/:callbackToken']);
    expect(routes({ open: true, token: 'a-token-of-16-chars' })).toEqual(['/ussd/x/:callbackToken', '/ussd/x']);
    expect(routes({ open: false })).toEqual([]);
    expect(isServed({ open: false })).toBe(false);
  });
});
