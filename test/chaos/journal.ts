/**
 * The chaos run's check of the journal (issue 32): the instances journal in a PostgreSQL database made for the
 * run (run.ts, dropped after it), and at the end every payment at the service must have its
 * intent in the journal (one operation per payment, by our ref), and each confirmed one its final state (the
 * service's, in our words) and a telling (someone was told its outcome).
 *
 * Figures: `intents` payments at the service whose ref the journal holds; `final` confirmed conversations'
 * payments whose journalled state is the service's final one; `told` of those, the ones with a telling. A run
 * passes when intents = payments and final = told = the confirmed conversations' payments.
 */
import pg from 'pg';
import { ourWord } from '../../src/reconciliation/match.js';
import type { SandboxPayment } from './count.js';
import { until } from '../until.js';

export interface JournalFigures {
  payments: number;
  intents: number;
  /** Payments of confirmed conversations: each must be final and told in the journal. */
  confirmed: number;
  final: number;
  told: number;
}

export interface JournalCheck {
  figures: JournalFigures;
  /** What is missing, one line per payment. */
  problems: string[];
  ok: boolean;
  /** `chaos: journal payments=P intents=I confirmed=C final=F told=T` */
  line: string;
}

const FINAL = new Set(['completed', 'failed', 'rejected', 'cancelled', 'refused', 'expired']);

/** Checks the journal once against the service's payments and the confirmed conversations' chats. */
export async function checkJournal(
  databaseUrl: string,
  payments: readonly SandboxPayment[],
  confirmedChats: ReadonlySet<string>,
): Promise<JournalCheck> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const refs = payments.flatMap((p) => (p.ref ? [p.ref] : []));
    const ops = await client.query<{
      ref: string;
      kind: string;
      state: string;
      told_state: string | null;
      tellings: string;
    }>(
      `select o.ref, o.kind, o.state, o.told_state,
         (select count(*) from operation_events e where e.ref = o.ref and e.type = 'telling') as tellings
       from operations o where o.ref = any($1::text[])`,
      [refs],
    );
    const byRef = new Map(ops.rows.map((row) => [row.ref, row]));
    const figures: JournalFigures = { payments: payments.length, intents: 0, confirmed: 0, final: 0, told: 0 };
    const problems: string[] = [];
    for (const p of payments) {
      const op = p.ref ? byRef.get(p.ref) : undefined;
      if (!op) {
        problems.push(`payment ${p.id} (${p.chat}, ref ${p.ref ?? 'none'}): no intent in the journal`);
        continue;
      }
      figures.intents++;
      if (!p.chat || !confirmedChats.has(p.chat)) continue;
      figures.confirmed++;
      const want = ourWord('payment', p.state);
      if (FINAL.has(op.state) && op.state === want) figures.final++;
      else problems.push(`payment ${p.id} (${p.chat}): the service holds ${p.state}, the journal says ${op.state}`);
      if (op.told_state !== null || Number(op.tellings) > 0) figures.told++;
      else problems.push(`payment ${p.id} (${p.chat}): no telling in the journal`);
    }
    const ok =
      figures.intents === figures.payments && figures.final === figures.confirmed && figures.told === figures.confirmed;
    const line = `chaos: journal payments=${figures.payments} intents=${figures.intents} confirmed=${figures.confirmed} final=${figures.final} told=${figures.told}`;
    return { figures, problems, ok, line };
  } finally {
    await client.end();
  }
}

/**
 * Checks until the journal is complete or `waitMs` passed (its later facts may still be on their way: an
 * outcome told a moment ago, a write buffered while the database was away), and returns the last check.
 */
export async function awaitJournal(
  databaseUrl: string,
  payments: () => readonly SandboxPayment[],
  confirmedChats: ReadonlySet<string>,
  waitMs = 30_000,
): Promise<JournalCheck> {
  let check: JournalCheck | undefined;
  const complete = async () => (check = await checkJournal(databaseUrl, payments(), confirmedChats)).ok;
  await until('the journal complete', complete, { timeoutMs: waitMs, everyMs: 1000 }).catch(() => undefined);
  return check!;
}
