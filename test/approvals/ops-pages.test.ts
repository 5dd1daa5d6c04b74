/**
 * The operator's pages show maker, checker and decision of a held payment (src/ops/payments.ts over the
 * `held_payments` rows), on both engines: the search's row says who decided what and when, the timeline names
 * the maker, the checker (identity, person, name) and the decision, and so do the JSON and the CSV exports; a
 * payment never held shows none of it.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parse } from 'csv-parse/sync';
import express from 'express';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { FlowCalls } from '../../flows/calls.js';
import { ApprovalDesk, type ApprovalBoard } from '../../src/approvals/desk.js';
import { AccessPolicy } from '../../src/conversation/calls/access-policy.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { Journal } from '../../src/journal/journal.js';
import { createLogger } from '../../src/log.js';
import { addPaymentsRoutes, CSV_COLUMNS, type PaymentItem } from '../../src/ops/payments.js';
import { forEachDatabase } from '../journal/databases.js';

const POLICY = {
  roles: {
    teller: {
      flows: ['pay'],
      perPaymentLimit: { UGX: '400000' },
      dailyLimit: { UGX: '5000000' },
      approvalAbove: { UGX: '100000' },
    },
    finance: { flows: [], perPaymentLimit: {}, dailyLimit: {}, approve: true },
  },
  users: { slack: { UMAKER: { role: 'teller', person: 'maria' }, UFIN: { role: 'finance', person: 'fatuma' } } },
};

const board: ApprovalBoard = { post: async (held) => ({ channel: 'C1', ts: held.id }), update: async () => {} };

const payment = (key: string, amount: string) => ({
  channel: 'slack',
  userId: 'UMAKER',
  duplicateCheckKey: key,
  paymentType: 'money' as const,
  phonenumber: '+256772000001',
  amount,
  currency: 'UGX',
  description: 'rent',
  metadata: { chat: 'slack:T1:UMAKER', ref: key },
});

forEachDatabase('approvals on the ops pages', (open) => {
  let server: Server;
  let url: string;

  beforeAll(async () => {
    const { db } = await open();
    const journal = new Journal(db);
    const policy = new AccessPolicy(POLICY);
    const store = new MemoryStore();
    const calls = {
      reserveSpend: (input) => policy.reserveSpend(store, { ...input, channel: input.channel as 'slack' }),
      createPayment: async () => ({ id: '77', state: 'new' }),
    } as Pick<FlowCalls, 'reserveSpend' | 'createPayment'> as FlowCalls;
    const desk = new ApprovalDesk({
      db,
      policy,
      calls,
      ttlHours: 24,
      tell: async () => {},
      logger: createLogger('silent'),
      now: () => Date.UTC(2026, 10, 24, 9),
    });
    desk.attach(board);
    const guarded = desk.guard(calls);
    await guarded.createPayment(payment('k-ops-approved', '150000'));
    await guarded.createPayment(payment('k-ops-rejected', '250000'));
    await guarded.createPayment(payment('k-ops-waiting', '350000'));
    const holds = await desk.held.byRefs(['k-ops-approved', 'k-ops-rejected']);
    const [approved, rejected] = [holds.get('k-ops-approved')!.id, holds.get('k-ops-rejected')!.id];
    await desk.decide(approved, { channel: 'slack', userId: 'UFIN', name: 'fin' }, 'approve');
    await desk.decide(rejected, { channel: 'slack', userId: 'UFIN', name: 'fin' }, 'reject', 'Wrong <b>account</b>');
    await journal.intend({
      ref: 'k-ops-plain',
      kind: 'payment',
      amount: '5000',
      currency: 'UGX',
      payee: '+256772000002',
      channel: 'ussd',
      channelUser: '+256772000009',
      chat: 'ussd:+256772000009',
      role: 'teller',
      flow: 'pay',
    });
    const app = express();
    addPaymentsRoutes(app, { journal, defaultCountry: 'UG' });
    server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, () => resolve(s));
    });
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }, 120_000);
  afterAll(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  const page = async (path: string) => {
    const res = await fetch(`${url}${path}`);
    expect(res.status).toBe(200);
    return res.text();
  };
  /** The search's row of one ref. */
  const rowOf = (html: string, ref: string) => new RegExp(`<tr data-ref="${ref}">[\\s\\S]*?</tr>`).exec(html)?.[0];

  it("shows each held payment's decision in the search: who, their person and when, or that it waits", async () => {
    const html = await page('/ops/payments');
    expect(rowOf(html, 'k-ops-approved')).toMatch(/approved by UFIN on slack \(person fatuma\) \(fin\) 2026-11-24/);
    expect(rowOf(html, 'k-ops-rejected')).toContain('rejected by UFIN on slack (person fatuma) (fin)');
    expect(rowOf(html, 'k-ops-rejected')).toContain('Wrong &lt;b&gt;account&lt;/b&gt;');
    expect(rowOf(html, 'k-ops-waiting')).toMatch(/waiting for an approver until 2026-11-25/);
    expect(rowOf(html, 'k-ops-plain')).not.toMatch(/approver|approved|rejected/);
  });

  it('names the maker, the checker and the decision on the timeline', async () => {
    const html = await page('/ops/payments/k-ops-approved');
    expect(html).toMatch(/<dt>Maker<\/dt>\s*<dd>UMAKER on slack \(person maria\)<\/dd>/);
    expect(html).toMatch(/<dt>Checker<\/dt>\s*<dd>UFIN on slack \(person fatuma\) \(fin\)<\/dd>/);
    expect(html).toMatch(/<dt>Decision<\/dt>\s*<dd class="approval">approved by UFIN/);
    const waiting = await page('/ops/payments/k-ops-waiting');
    expect(waiting).toMatch(/<dt>Checker<\/dt>\s*<dd>–<\/dd>/);
    expect(await page('/ops/payments/k-ops-plain')).not.toContain('<dt>Checker</dt>');
  });

  it('gives maker, checker and decision in the JSON and the CSV, as the pages show them', async () => {
    const res = await fetch(`${url}/ops/payments.json`);
    expect(res.status).toBe(200);
    const items = new Map(((await res.json()) as { items: PaymentItem[] }).items.map((i) => [i.key, i]));
    expect(items.get('k-ops-approved')).toMatchObject({
      maker: 'UMAKER on slack (person maria)',
      checker: 'UFIN on slack (person fatuma) (fin)',
      decision: 'approved',
      decidedAt: expect.stringMatching(/^2026-11-24T09:00:00\.000Z$/),
      decisionReason: null,
    });
    expect(items.get('k-ops-rejected')).toMatchObject({
      checker: 'UFIN on slack (person fatuma) (fin)',
      decision: 'rejected',
      decisionReason: 'Wrong <b>account</b>',
    });
    expect(items.get('k-ops-waiting')).toMatchObject({
      maker: 'UMAKER on slack (person maria)',
      checker: null,
      decision: 'held',
      decidedAt: null,
    });
    expect(items.get('k-ops-plain')).toMatchObject({ maker: null, checker: null, decision: null });

    const csv = await fetch(`${url}/ops/payments.csv`);
    expect(csv.status).toBe(200);
    const [header, ...rows] = parse(await csv.text()) as string[][];
    expect(header!.slice(0, CSV_COLUMNS.length)).toEqual([...CSV_COLUMNS]);
    const byRef = new Map(rows.map((row) => [row[header!.indexOf('key')], row]));
    const cell = (ref: string, column: string) => byRef.get(ref)![header!.indexOf(column)];
    for (const ref of ['k-ops-approved', 'k-ops-rejected', 'k-ops-waiting', 'k-ops-plain']) {
      for (const column of ['maker', 'checker', 'decision', 'decidedAt', 'decisionReason'] as const)
        expect(cell(ref, column), `${ref} ${column}`).toBe(items.get(ref)![column] ?? '');
    }
  });
});
