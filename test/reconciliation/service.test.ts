/**
 * The service's side of a reconciliation against a real sandbox over HTTP: every record of the period, pages
 * of the largest size the service takes (MAX_LIST_LIMIT), one budgeted read a page.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_LIST_LIMIT } from '../../src/momo/assumptions.js';
import { MomoClient } from '../../src/momo/index.js';
import { dayOf } from '../../src/reconciliation/run.js';
import { serviceSide } from '../../src/reconciliation/service.js';
import { TEST_NUMBERS } from '../../src/sandbox/index.js';
import { API_KEY, startSandbox, type RunningSandbox } from '../sandbox/harness.js';

const SARAH = TEST_NUMBERS.find((t) => t.behaviour === 'registered')!.phonenumber;
const PAYMENTS = 2 * MAX_LIST_LIMIT + 50;

let sb: RunningSandbox;
let reads = 0;
beforeAll(async () => {
  sb = await startSandbox();
  for (let i = 0; i < PAYMENTS; i++) {
    const res = await sb.api('POST', '/payments', {
      json: {
        currency: 'UGX',
        description: 'Pay',
        amount: String(100 + i),
        phonenumber: SARAH,
        metadata: { ref: `p${i}` },
      },
    });
    expect(res.status).toBe(201);
  }
});
afterAll(() => sb.close());

describe('serviceSide', () => {
  it(`lists ${PAYMENTS} payments of a day in pages of ${MAX_LIST_LIMIT}: one read a page`, async () => {
    const client = new MomoClient({
      baseUrl: sb.base,
      apiKey: API_KEY,
      readBudget: { take: async () => void reads++ },
    });
    const day = dayOf(sb.controls.now().getTime());
    const next = dayOf(sb.controls.now().getTime() + 86_400_000);
    reads = 0;
    const seen: string[] = [];
    for await (const record of serviceSide(client).list('payment', {
      createdAfter: `${day} 00:00`,
      createdBefore: `${next} 00:00`,
    }))
      seen.push(record.ref);
    expect(new Set(seen).size).toBe(PAYMENTS);
    expect(reads).toBe(Math.ceil(PAYMENTS / MAX_LIST_LIMIT));

    // Another day holds none of them: one read, nothing listed.
    reads = 0;
    const none: string[] = [];
    for await (const record of serviceSide(client).list('payment', {
      createdAfter: `${next} 00:00`,
      createdBefore: `${next} 23:59`,
    }))
      none.push(record.ref);
    expect([none, reads]).toEqual([[], 1]);
  });

  it('reads one record by id; an id the service does not hold is null', async () => {
    const client = new MomoClient({ baseUrl: sb.base, apiKey: API_KEY });
    const first = sb.controls.payments()[0]!;
    expect(await serviceSide(client).get('payment', String(first.id))).toMatchObject({
      kind: 'payment',
      id: String(first.id),
      state: 'new',
    });
    expect(await serviceSide(client).get('payment', '99999999')).toBeNull();
  });
});
