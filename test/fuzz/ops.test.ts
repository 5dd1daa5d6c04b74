/**
 * Fuzzing the operator page's routes over real HTTP (/ops, its files and its JSON): any method, path,
 * headers and query, with and without credentials. No 5xx, no hang, every rejection a 4xx with a reason.
 * The fuzzed product is the demo, where /ops is open; test/ops/page.test.ts covers its Basic auth.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { anyRequestTo, count, fuzz, fuzzSuite, pathsUnder, sendAll, type FuzzRequest } from './harness.js';

const suite = fuzzSuite('ops');
const BATCH = 6;

/** Query strings for /ops/funnel.json: the real parameters with good and bad values, repeated, unknown ones. */
const query = fc
  .array(
    fc.tuple(
      fc.constantFrom('days', 'channel', 'days', 'flow', 'user', 'days[]', ''),
      fc.oneof(
        fc.constantFrom('1', '7', '30', '31', '0', '-1', '1e3', 'ussd', 'telegram', 'slack', 'fax', ''),
        fc.string({ maxLength: 12 }),
      ),
    ),
    { maxLength: 4 },
  )
  .map((pairs) => pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&'));

describe('the operator page under fuzzing', () => {
  it('/ops/funnel.json: any query gets the funnel or a 400 with a reason', async () => {
    const statuses = new Set<number>();
    const request = fc
      .tuple(query, fc.option(fc.constantFrom('Basic b3BzOnBhc3M=', 'Basic !!', 'Bearer x'), { nil: undefined }))
      .map(([q, authorization]): FuzzRequest => ({
        method: 'GET',
        path: `/ops/funnel.json?${q}`,
        headers: authorization ? { authorization } : {},
        body: undefined,
      }));
    const sent = await fuzz(
      fc.array(request, { minLength: BATCH, maxLength: BATCH }),
      async (batch) => {
        for (const res of await sendAll(suite.product.url, batch)) statuses.add(res.status);
      },
      40,
    );
    count('/ops/funnel.json', sent);
    expect(statuses).toContain(200);
    expect(statuses).toContain(400);
    expect(suite.watch.failures).toEqual([]);
  });

  it('/ops/*: any method, path, headers and body', async () => {
    const paths = pathsUnder('/ops', [
      '',
      '/funnel.json',
      '/status.json',
      '/ops.js',
      '/ops.css',
      '/chart.umd.min.js',
      '/unknown',
    ]);
    const sent = await fuzz(
      fc.array(anyRequestTo(paths), { minLength: BATCH, maxLength: BATCH }),
      async (batch) => void (await sendAll(suite.product.url, batch)),
      30,
    );
    count('/ops/* (any)', sent);
    expect(suite.watch.failures).toEqual([]);
  });
});
