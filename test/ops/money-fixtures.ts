/**
 * What the money pages' tests read: a journal with operations on every channel, in several states and days,
 * each with its events, some carrying values a spreadsheet or a browser must not run.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import type { Kysely } from 'kysely';
import type { Journal } from '../../src/journal/journal.js';
import type { Funnel } from '../../src/ops/funnel.js';
import { addOpsPage } from '../../src/ops/page.js';

/** A cell a spreadsheet would run as a formula if written as it is. */
export const FORMULA_USER = "-1+cmd|' /C calc'!A0";
export const FORMULA_NAME = '+1+HYPERLINK("http://evil.example/x","Open")';
export const MARKUP_TEXT = '<img src=x onerror=alert(1)><script>alert(2)</script>';

/** The fixture operations' refs by name. */
export type Refs = Record<'completed' | 'failed' | 'open' | 'held' | 'hostile' | 'telegram', string>;

/** Writes the fixture operations; returns their refs by name. */
export async function seedJournal(journal: Journal): Promise<Refs> {
  const refs = {
    completed: 'ref-completed-0001',
    failed: 'ref-failed-0002',
    open: 'ref-open-0003',
    held: 'ref-held-0004',
    hostile: 'ref-hostile-0005',
    telegram: 'ref-telegram-0006',
  };
  const base = { currency: 'UGX', role: 'staff', flow: 'pay', kind: 'payment' as const };
  await journal.intend({
    ...base,
    ref: refs.completed,
    amount: '1500',
    payee: '+256772000001',
    payeeName: 'John Okello',
    channel: 'ussd',
    channelUser: '+256772999001',
    chat: 'ussd:+256772999001',
    at: new Date('2026-11-20T09:00:00Z'),
  });
  await journal.answered(refs.completed, {
    serviceId: 'pay_completed_1',
    serviceState: 'pending',
    at: new Date('2026-11-20T09:00:02Z'),
  });
  await journal.stateReported(refs.completed, {
    state: 'completed',
    serviceState: 'successful',
    source: 'notification',
    at: new Date('2026-11-20T09:00:30Z'),
  });
  await journal.told(refs.completed, {
    channel: 'ussd',
    to: '+256772999001',
    text: 'You sent UGX 1,500 to John Okello.',
    outcome: 'completed',
    at: new Date('2026-11-20T09:00:31Z'),
  });

  await journal.intend({
    ...base,
    ref: refs.failed,
    amount: '250.50',
    payee: '+256772000002',
    channel: 'slack',
    channelUser: 'U0MAKER',
    chat: 'slack:C0PAY',
    at: new Date('2026-11-21T10:00:00Z'),
  });
  await journal.answered(refs.failed, {
    serviceId: 'pay_failed_2',
    serviceState: 'pending',
    at: new Date('2026-11-21T10:00:01Z'),
  });
  await journal.stateReported(refs.failed, {
    state: 'failed',
    serviceState: 'failed',
    source: 'read',
    at: new Date('2026-11-21T10:05:00Z'),
  });

  await journal.intend({
    ...base,
    ref: refs.open,
    amount: '7000',
    payee: '+256772000003',
    channel: 'ussd',
    channelUser: '+256772999003',
    chat: 'ussd:+256772999003',
    at: new Date('2026-11-22T11:00:00Z'),
  });
  await journal.answered(refs.open, {
    serviceId: 'pay_open_3',
    serviceState: 'pending',
    at: new Date('2026-11-22T11:00:01Z'),
  });

  await journal.intend({
    ...base,
    ref: refs.held,
    amount: '900000',
    payee: '+256772000004',
    channel: 'slack',
    channelUser: 'U0MAKER',
    chat: 'slack:C0PAY',
    state: 'held',
    at: new Date('2026-11-22T12:00:00Z'),
  });
  await journal.approvalDecided(refs.held, {
    decision: 'approved',
    by: 'U0CHECKER',
    reason: 'invoice 42',
    at: new Date('2026-11-22T12:10:00Z'),
  });

  await journal.intend({
    ...base,
    ref: refs.hostile,
    amount: '10',
    payee: '+256772000005',
    payeeName: FORMULA_NAME,
    channel: 'whatsapp',
    channelUser: FORMULA_USER,
    chat: MARKUP_TEXT,
    at: new Date('2026-11-23T08:00:00Z'),
  });
  await journal.refused(refs.hostile, { status: 400, reason: MARKUP_TEXT, at: new Date('2026-11-23T08:00:01Z') });

  await journal.intend({
    ...base,
    kind: 'request',
    flow: 'request',
    ref: refs.telegram,
    amount: '3000',
    currency: 'KES',
    payee: '+254712000006',
    channel: 'telegram',
    channelUser: '777000',
    chat: 'telegram:777000',
    at: new Date('2026-11-23T09:00:00Z'),
  });
  await journal.answered(refs.telegram, {
    serviceId: 'req_6',
    serviceState: 'pending',
    at: new Date('2026-11-23T09:00:01Z'),
  });
  await journal.stateReported(refs.telegram, {
    state: 'completed',
    serviceState: 'successful',
    source: 'notification',
    at: new Date('2026-11-23T09:03:00Z'),
  });
  return refs;
}

/** Two reconciliation runs (tables of migration 0010): a clean one, and one with each kind of difference. */
export async function seedReconciliation(db: Kysely<any>, refs: Refs): Promise<void> {
  const clean = await db
    .insertInto('reconciliation_runs')
    .values({
      from_day: '2026-11-20',
      to_day: '2026-11-20',
      started: '2026-11-21T02:00:00Z',
      finished: '2026-11-21T02:01:10Z',
      status: 'clean',
      trigger: 'daily',
      counts: JSON.stringify({ matched: 1, unknown_to_service: 0, not_ours: 0, state_differs: 0, detail_differs: 0 }),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  await db
    .insertInto('reconciliation_items')
    .values({
      run_id: clean.id,
      outcome: 'matched',
      ref: refs.completed,
      service_id: 'pay_completed_1',
      ours: JSON.stringify({ amount: '1500', currency: 'UGX', payee: '+256772000001', state: 'completed' }),
      theirs: JSON.stringify({ amount: '1500', currency: 'UGX', phone: '+256772000001', state: 'processed' }),
      differs: null,
    })
    .execute();
  const differing = await db
    .insertInto('reconciliation_runs')
    .values({
      from_day: '2026-11-21',
      to_day: '2026-11-23',
      started: '2026-11-24T09:00:00Z',
      finished: '2026-11-24T09:03:00Z',
      status: 'differences',
      trigger: 'command',
      counts: JSON.stringify({ matched: 2, unknown_to_service: 1, not_ours: 1, state_differs: 1, detail_differs: 1 }),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const item = (
    outcome: string,
    ref: string | null,
    serviceId: string | null,
    ours: object | null,
    theirs: object | null,
    differs: string[] | null = null,
  ) => ({
    run_id: differing.id,
    outcome,
    ref,
    service_id: serviceId,
    ours: ours ? JSON.stringify(ours) : null,
    theirs: theirs ? JSON.stringify(theirs) : null,
    differs: differs ? JSON.stringify(differs) : null,
  });
  await db
    .insertInto('reconciliation_items')
    .values([
      item(
        'matched',
        refs.failed,
        'pay_failed_2',
        { amount: '250.50', currency: 'UGX', payee: '+256772000002', state: 'failed' },
        { amount: '250.50', currency: 'UGX', phone: '+256772000002', state: 'processed_with_errors' },
      ),
      item(
        'matched',
        refs.telegram,
        'req_6',
        { amount: '3000', currency: 'KES', payee: '+254712000006', state: 'completed' },
        { amount: '3000', currency: 'KES', phone: '+254712000006', state: 'successful' },
      ),
      item(
        'state_differs',
        refs.open,
        'pay_open_3',
        { amount: '7000', currency: 'UGX', payee: '+256772000003', state: 'submitted' },
        { amount: '7000', currency: 'UGX', phone: '+256772000003', state: 'processed' },
      ),
      item(
        'unknown_to_service',
        refs.held,
        null,
        { amount: '900000', currency: 'UGX', payee: '+256772000004', state: 'intended' },
        null,
      ),
      item(
        'detail_differs',
        refs.hostile,
        'pay_hostile_5',
        { amount: '10', currency: 'UGX', payee: '+256772000005', state: 'refused' },
        { amount: '100', currency: 'UGX', phone: '+256772000005', state: 'processed' },
        ['amount'],
      ),
      item('not_ours', null, 'pay_elsewhere_9', null, {
        amount: '55000',
        currency: 'UGX',
        phone: '+256772000099',
        state: 'processed',
        kind: 'payment',
      }),
    ])
    .execute();
}

/** The /ops routes on a server of their own (Basic auth and the OPS_TOKEN), reading `journal`. */
export async function startOps(
  journal: Journal,
  auth: { user: string; password: string; token: string },
  now?: () => Date,
): Promise<{ url: string; close(): Promise<void> }> {
  const app = express();
  addOpsPage(app, {
    funnel: { daysKept: 30, report: async () => ({ days: [], channels: [], flows: [] }) } as unknown as Funnel,
    metrics: {
      status: async () => ({ queueDepth: 0, service: { byStatus: {}, total: 0, rateLimited: 0, errors: 0 } }),
    },
    credentials: { user: auth.user, password: auth.password },
    opsToken: auth.token,
    open: false,
    journal,
    country: { defaultCountry: 'UG' },
    signInLimit: { failures: 1000, windowSeconds: 60 },
    now,
  });
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
