/**
 * The journal on the money path, through the whole product (real engine, embedded sandbox, its webhooks) on
 * both engines: PostgreSQL (a database of this file's own) and PGlite in memory.
 * - A USSD payment leaves its intent, the service's answer, the states it reported and what was told.
 * - The hops of a USSD conversation write nothing to the database, except the hop that moves money (one
 *   statement: the intent).
 * - When the database refuses the intent, no payment reaches the service and the person is told nothing was
 *   sent and to try again shortly.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningApp } from '../../src/app.js';
import { AtSession, sandboxGet, startProduct } from '../e2e/helpers.js';
import { reading, until } from '../until.js';
import { serverDatabase, type ServerDatabase } from './server-database.js';

interface Payments {
  count: number;
  results: Array<{ id: number; state: string; metadata: Record<string, string> | null }>;
}

/** The answers of a USSD payment of `amount` UGX to Sarah Nakato (the sandbox's +256772000001), up to the PIN. */
const payTo = (amount: string) => ['1', '1', '0772000001', 'Sarah', 'Nakato', amount, '1', '1'];
const PAYEE = '+256772000001';

/** The sandbox's payments made from this chat. */
async function paymentsOf(app: RunningApp, chat: string): Promise<Payments['results']> {
  const all = await sandboxGet<Payments>(app, `/api/payments?phonenumber=${encodeURIComponent(PAYEE)}`);
  return all.results.filter((p) => p.metadata?.chat === chat);
}

/** A statement that changes something. */
const isWrite = (text: string) => /^\s*(with\b[\s\S]*\b)?(insert|update|delete)\b/i.test(text);

for (const engine of ['postgres', 'pglite'] as const) {
  describe(`the journal on the money path (${engine})`, () => {
    let app: RunningApp;
    let server: ServerDatabase | undefined;
    beforeAll(async () => {
      server = engine === 'postgres' ? await serverDatabase('money_path') : undefined;
      app = await startProduct(server ? { DATABASE_URL: server.url } : {});
    });
    afterAll(async () => {
      await app?.stop();
      await server?.drop();
    });

    it('keeps a USSD payment: intent, answer, reported states and the telling; only the money hop writes', async () => {
      const me = '+256700333001';
      const writes: string[] = [];
      const stop = app.database.watch((text) => {
        if (isWrite(text)) writes.push(text);
      });
      const ussd = new AtSession(app.url, me);
      await ussd.dial();
      for (const answer of payTo('7000')) await ussd.answer(answer);
      expect(ussd.screens.at(-1)).toMatch(/PIN/);
      expect(writes, 'hops that move no money write nothing').toEqual([]);
      const outcome = await ussd.answer('1234');
      expect(outcome).toMatch(/^END /);
      expect(outcome).not.toMatch(/try again/i);
      const intents = () => writes.filter((w) => /insert into "?operations"? /.test(w));
      expect(intents(), 'the money hop writes its intent').toHaveLength(1);

      const row = await until(
        'the payment completed and told in the journal',
        reading(
          async () => (await app.journal.search({ phone: me })).items[0],
          (op) => op?.state === 'completed' && op.told_state === 'completed',
        ),
        { timeoutMs: 10_000, everyMs: 50 },
      );
      expect(row).toMatchObject({
        kind: 'payment',
        amount: '7000',
        currency: 'UGX',
        payee: PAYEE,
        payee_name: 'Sarah Nakato',
        channel: 'ussd',
        channel_user: me,
        chat: `ussd:${me}`,
        flow: 'pay',
      });
      expect(row!.role).not.toBe('');
      expect(row!.service_id).toMatch(/^\d+$/);
      // The SMS telling and the one kept for the next dial are written as each is done: wait for both.
      const timeline = await until(
        'the telling kept for the next dial',
        reading(
          () => app.journal.timeline(row!.ref),
          (events) =>
            events.some((e) => e.type === 'telling' && e.source === 'notification' && e.data.channel === 'ussd'),
        ),
        { timeoutMs: 10_000, everyMs: 50 },
      );
      const types = timeline.map((e) => e.type);
      expect(types[0]).toBe('intent');
      expect(types).toContain('answer');
      expect(timeline.filter((e) => e.type === 'state').map((e) => e.source)).toContain('notification');
      const telling = timeline.find(
        (e) => e.type === 'telling' && e.source === 'notification' && e.data.channel === 'ussd',
      );
      expect(telling?.data).toMatchObject({ to: `ussd:${me}`, outcome: 'completed' });
      expect(String(telling?.data.text)).toMatch(/7,?000/);
      // The screen that answered the payment is kept too, as the conversation's own telling.
      const answered = timeline.find((e) => e.type === 'telling' && e.source === 'conversation');
      expect(answered?.data).toMatchObject({ channel: 'ussd', to: `ussd:${me}` });
      expect(String(answered?.data.text)).toBe(outcome.replace(/^END /, ''));
      // No PIN anywhere in what was kept: not as a value or a word of one (ids and hashes, made of letters, digits
      // and dashes, may hold its digits by chance: a run saw 1234 inside an id).
      expect(JSON.stringify(timeline)).not.toMatch(/(?<![\w-])1234(?![\w-])/);

      // The next dial shows the outcome: still no write of an intent.
      const before = intents().length;
      await new AtSession(app.url, me).dial();
      expect(intents()).toHaveLength(before);
      stop();
    });

    it('keeps two exam pins at their whole price in naira, and their telling without the pins', async () => {
      const me = '+2348031900001';
      const ussd = new AtSession(app.url, me);
      await ussd.dial();
      // Exam pins, the first exam, its first bundle, two of them, the candidate's code.
      for (const answer of ['5', '1', '1', '2', '1234567890']) await ussd.answer(answer);
      const summary = ussd.screens.at(-1)!;
      const total = /Total ([\d,]+) NGN/.exec(summary)?.[1]?.replaceAll(',', '');
      expect(total, summary).toBeDefined();
      const outcome = await ussd.answer('1234');
      const pins = /Pins: ([\d, -]+)\./.exec(outcome)?.[1]?.split(', ') ?? [];
      expect(pins, outcome).toHaveLength(2);
      const row = await until(
        'the purchase in the journal',
        reading(
          async () => (await app.journal.search({ phone: me })).items[0],
          (op) => op?.state === 'completed',
        ),
        { timeoutMs: 10_000, everyMs: 50 },
      );
      // The whole price (two pins), as the phone's total said, in its currency.
      expect(row).toMatchObject({ kind: 'purchase', flow: 'pin', amount: total, currency: 'NGN' });
      const timeline = await until(
        "the purchase's telling",
        reading(
          () => app.journal.timeline(row!.ref),
          (events) => events.some((e) => e.type === 'telling' && e.source === 'conversation'),
        ),
        { timeoutMs: 10_000, everyMs: 50 },
      );
      const told = timeline.find((e) => e.type === 'telling' && e.source === 'conversation');
      expect(String(told?.data.text)).toMatch(/2 pins \(hidden\)/);
      // The pins are vouchers worth money: none of them is kept where an operator reads.
      for (const pin of pins) expect(JSON.stringify(timeline)).not.toContain(pin);

      // /ops reads as the phone did: the whole price, grouped, in naira; the cards sum naira with naira only.
      const shown = `${Number(total).toLocaleString('en')} NGN`;
      const list = await (await fetch(`${app.url}/ops/payments?phone=${encodeURIComponent(me)}`)).text();
      expect(list).toContain(`<td class="num">${shown}</td>`);
      const detail = await (await fetch(`${app.url}/ops/payments/${encodeURIComponent(row!.ref)}`)).text();
      expect(detail).toContain(`<dd>${shown}</dd>`);
      const money = (await (await fetch(`${app.url}/ops/money.json?days=1`)).json()) as {
        totals: Array<{ currency: string; kind: string; completed: { count: number; total: string } }>;
      };
      const purchases = money.totals.filter((t) => t.kind === 'purchase');
      expect(purchases.map((t) => t.currency)).toEqual(['NGN']);
      expect(Number(purchases[0]!.completed.total)).toBeGreaterThanOrEqual(Number(total));
    });

    it('when the database refuses the intent: no payment at the service, the person told to try again shortly', async () => {
      const me = '+256700333002';
      await sql`create or replace function refuse_intents() returns trigger language plpgsql as $$
        begin raise exception 'refused by the test'; end $$`.execute(app.database.db);
      await sql`create trigger refuse_intents before insert on operation_events for each row execute function refuse_intents()`.execute(
        app.database.db,
      );
      try {
        const ussd = new AtSession(app.url, me);
        await ussd.dial();
        for (const answer of payTo('9000')) await ussd.answer(answer);
        const outcome = await ussd.answer('1234');
        expect(outcome).toMatch(/^END /);
        expect(outcome).toMatch(/Nothing was sent/);
        expect(outcome).toMatch(/try again shortly/);
        expect(outcome).not.toMatch(/submitted|sent to|being confirmed/i);
        expect(await paymentsOf(app, `ussd:${me}`)).toEqual([]);
        expect((await app.journal.search({ phone: me })).items).toEqual([]);
      } finally {
        await sql`drop trigger refuse_intents on operation_events`.execute(app.database.db);
      }
      // Once the database takes it again, the same person pays (a new attempt, a new key).
      const again = new AtSession(app.url, me);
      await again.dial();
      for (const answer of payTo('9000')) await again.answer(answer);
      expect(await again.answer('1234')).not.toMatch(/Nothing was sent/);
      const paid = await until(
        'one payment once the database is back',
        reading(
          () => paymentsOf(app, `ussd:${me}`),
          (p) => p.length === 1,
        ),
        { timeoutMs: 10_000, everyMs: 50 },
      );
      expect(paid).toHaveLength(1);
    });
  });
}
