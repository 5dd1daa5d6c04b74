/**
 * What the money pages' tests read: a journal with operations on every channel, in several states and days,
 * each with its events, some carrying values a spreadsheet or a browser must not run.
 */
import type { Journal } from '../../src/journal/journal.js';

/** A cell a spreadsheet would run as a formula if written as it is. */
export const FORMULA_USER = "-1+cmd|' /C calc'!A0";
export const FORMULA_NAME = '+1+HYPERLINK("http://evil.example/x","Open")';
export const MARKUP_TEXT = '<img src=x onerror=alert(1)><script>alert(2)</script>';

/** Writes the fixture operations; returns their refs by name. */
export async function seedJournal(journal: Journal): Promise<Record<string, string>> {
  const refs = {
    completed: 'ref-completed-0001',
    failed: 'ref-failed-0002',
    open: 'ref-open-0003',
    held: 'ref-held-0004',
    hostile: 'ref-hostile-0005',
    telegram: 'ref-telegram-0006',
  };
  const base = { currency: 'UGX', role: 'staff', flow: 'pay', kind: 'payment' as const };
  await journal.intend({ ...base, ref: refs.completed, amount: '1500', payee: '+256772000001', payeeName: 'John Okello', channel: 'ussd', channelUser: '+256772999001', chat: 'ussd:+256772999001', at: new Date('2026-11-20T09:00:00Z') });
  await journal.answered(refs.completed, { serviceId: 'pay_completed_1', serviceState: 'pending', at: new Date('2026-11-20T09:00:02Z') });
  await journal.stateReported(refs.completed, { state: 'completed', serviceState: 'successful', source: 'notification', at: new Date('2026-11-20T09:00:30Z') });
  await journal.told(refs.completed, { channel: 'ussd', to: '+256772999001', text: 'You sent UGX 1,500 to John Okello.', outcome: 'completed', at: new Date('2026-11-20T09:00:31Z') });

  await journal.intend({ ...base, ref: refs.failed, amount: '250.50', payee: '+256772000002', channel: 'slack', channelUser: 'U0MAKER', chat: 'slack:C0PAY', at: new Date('2026-11-21T10:00:00Z') });
  await journal.answered(refs.failed, { serviceId: 'pay_failed_2', serviceState: 'pending', at: new Date('2026-11-21T10:00:01Z') });
  await journal.stateReported(refs.failed, { state: 'failed', serviceState: 'failed', source: 'read', at: new Date('2026-11-21T10:05:00Z') });

  await journal.intend({ ...base, ref: refs.open, amount: '7000', payee: '+256772000003', channel: 'ussd', channelUser: '+256772999003', chat: 'ussd:+256772999003', at: new Date('2026-11-22T11:00:00Z') });
  await journal.answered(refs.open, { serviceId: 'pay_open_3', serviceState: 'pending', at: new Date('2026-11-22T11:00:01Z') });

  await journal.intend({ ...base, ref: refs.held, amount: '900000', payee: '+256772000004', channel: 'slack', channelUser: 'U0MAKER', chat: 'slack:C0PAY', state: 'held', at: new Date('2026-11-22T12:00:00Z') });
  await journal.approvalDecided(refs.held, { decision: 'approved', by: 'U0CHECKER', reason: 'invoice 42', at: new Date('2026-11-22T12:10:00Z') });

  await journal.intend({ ...base, ref: refs.hostile, amount: '10', payee: '+256772000005', payeeName: FORMULA_NAME, channel: 'whatsapp', channelUser: FORMULA_USER, chat: MARKUP_TEXT, at: new Date('2026-11-23T08:00:00Z') });
  await journal.refused(refs.hostile, { status: 400, reason: MARKUP_TEXT, at: new Date('2026-11-23T08:00:01Z') });

  await journal.intend({ ...base, kind: 'request', flow: 'request', ref: refs.telegram, amount: '3000', currency: 'KES', payee: '+254712000006', channel: 'telegram', channelUser: '777000', chat: 'telegram:777000', at: new Date('2026-11-23T09:00:00Z') });
  await journal.answered(refs.telegram, { serviceId: 'req_6', serviceState: 'pending', at: new Date('2026-11-23T09:00:01Z') });
  await journal.stateReported(refs.telegram, { state: 'completed', serviceState: 'successful', source: 'notification', at: new Date('2026-11-23T09:03:00Z') });
  return refs;
}
