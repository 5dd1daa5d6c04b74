/**
 * Issue 47's one reference: for one payment made over USSD in the whole product (Africa's Talking requests,
 * the embedded sandbox, PostgreSQL), the same short ref (ours, `MC-…`) is read on the phone's last screen, in
 * the outcome at the next dial, in /ops (the list and the payment's page, with the service's id beside it) and
 * in the CSV export, where the service's id has its own column; `/ops/payments?ref=` finds it as typed.
 */
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RunningApp } from '../../src/app.js';
import { SHORT_REF_SHAPE } from '../../src/journal/short-ref.js';
import { CSV_COLUMNS, type PaymentItem } from '../../src/ops/payments.js';
import { serverDatabase, type ServerDatabase } from '../journal/databases.js';
import { AtSession, startProduct } from './helpers.js';
import { reading, until } from '../until.js';

const USER = 'operator';
const PASSWORD = 'a long operator password';
const OPERATOR = { authorization: `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}` };
const PAYER = '+256700222047';

let server: ServerDatabase;
let app: RunningApp;

beforeAll(async () => {
  server = await serverDatabase('one_reference');
  app = await startProduct({ DATABASE_URL: server.url, OPS_USER: USER, OPS_PASSWORD: PASSWORD });
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await server?.drop();
});

it('one payment: the same short ref on the screen, at the next dial, on /ops and in the CSV', async () => {
  const at = new AtSession(app.url, PAYER);
  await at.dial();
  for (const answer of ['1', '1', '0772000001', 'Sarah', 'Nakato', '5000', '1', '1', '1234']) await at.answer(answer);
  const sent = /^END Sent: 5,000 UGX to Sarah Nakato\. Ref (MC-[A-Z0-9]+)\./.exec(at.screens.at(-1)!);
  expect(sent, at.screens.at(-1)).not.toBeNull();
  const ref = sent![1]!;
  expect(ref).toMatch(SHORT_REF_SHAPE);

  // The search finds it as a teller types it: lower case, without its dash.
  const [paid] = await until(
    'the payment completed in the journal',
    reading(
      async () => {
        const res = await fetch(`${app.url}/ops/payments.json?ref=${ref.replace('-', '').toLowerCase()}`, {
          headers: OPERATOR,
        });
        return ((await res.json()) as { items: PaymentItem[] }).items;
      },
      (found) => found.length === 1 && found[0]!.state === 'completed',
    ),
    { timeoutMs: 10_000, everyMs: 50 },
  );
  expect(paid).toMatchObject({ ref, payee: '+256772000001', user: PAYER });
  const id = paid!.id!;
  expect(id).toBeTruthy();

  // The outcome at the next dial names it too.
  const next = await new AtSession(app.url, PAYER).dial();
  expect(next).toContain(`Done: 5,000 UGX reached +256772000001. Ref ${ref}.`);

  // /ops: the list and the payment's page, ours with the service's id beside it.
  const list = await (
    await fetch(`${app.url}/ops/payments?phone=${encodeURIComponent(PAYER)}`, { headers: OPERATOR })
  ).text();
  expect(list).toContain(`${ref} (service ${id})`);
  const timeline = await fetch(`${app.url}/ops/payments/${encodeURIComponent(paid!.key)}`, { headers: OPERATOR });
  expect(timeline.status).toBe(200);
  expect(await timeline.text()).toContain(`${ref} (service ${id})`);

  // The CSV: ours under `ref`, the service's id in a column of its own.
  const csv = await fetch(`${app.url}/ops/payments.csv?ref=${ref}`, { headers: OPERATOR });
  const rows = parse(await csv.text(), { bom: true }) as string[][];
  expect(rows).toHaveLength(2);
  const row = Object.fromEntries(CSV_COLUMNS.map((c, i) => [c, rows[1]![i]]));
  expect(row).toMatchObject({ ref, id, key: paid!.key });
});
