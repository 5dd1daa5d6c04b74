/**
 * OPS_TOKEN: /metrics and the details of /readyz (what failed and why, the service's address) are for the
 * operator. With OPS_TOKEN set they need `Authorization: Bearer <OPS_TOKEN>`; /healthz and /readyz's status
 * stay open for load balancers. Before, anyone who reached the product read them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProductionProduct, type ProductionProduct } from './production.js';

const OPS_TOKEN = 'ops-0123456789abcdef0123';

let product: ProductionProduct;
beforeAll(async () => {
  product = await startProductionProduct({ OPS_TOKEN });
});
afterAll(async () => {
  await product?.stop();
});

const get = (path: string, authorization?: string) =>
  fetch(`${product.url}${path}`, { headers: authorization ? { authorization } : {} });

describe('OPS_TOKEN', () => {
  it('keeps /metrics for the bearer of the token', async () => {
    for (const authorization of [
      undefined,
      'Bearer wrong-token-0123456789',
      `Basic ${OPS_TOKEN}`,
      `Bearer ${OPS_TOKEN}x`,
    ]) {
      const refused = await get('/metrics', authorization);
      expect(refused.status).toBe(401);
      expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(await refused.text()).not.toMatch(/momo_http_requests_total/);
    }
    const served = await get('/metrics', `Bearer ${OPS_TOKEN}`);
    expect(served.status).toBe(200);
    expect(await served.text()).toMatch(/momo_http_requests_total/);
  });

  it('gives /readyz its status for everyone and its details for the bearer only; /healthz stays open', async () => {
    const open = await get('/readyz');
    expect(await open.json()).toEqual({ ok: true });
    const detailed = await get('/readyz', `Bearer ${OPS_TOKEN}`);
    expect(detailed.status).toBe(open.status);
    expect(await detailed.json()).toMatchObject({
      ok: true,
      store: { ok: true },
      service: { ok: true },
      journal: { ok: true },
    });
    expect((await get('/healthz')).status).toBe(200);
  });

  it('production without OPS_TOKEN says at start that they are open', async () => {
    expect(product.logs.join('')).not.toMatch(/OPS_TOKEN is not set/);
    const open = await startProductionProduct();
    try {
      expect(open.logs.join('')).toMatch(/OPS_TOKEN is not set: \/metrics and the details of \/readyz are open/);
      expect((await fetch(`${open.url}/metrics`)).status).toBe(200);
    } finally {
      await open.stop();
    }
  });
});
