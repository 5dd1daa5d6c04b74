/**
 * Three differences of one reconciliation run, as /ops/reconciliation lists them (tests of closing them):
 * `told` (completed, told so; the service failed it: a correction to `failed` that tells a person), `ghost`
 * (unknown to the service: corrected to `refused`, or resolved), `detail` (another amount: only resolved).
 */
import type { Kysely } from 'kysely';
import type { Journal } from '../../src/journal/journal.js';
import type { ReconciliationSchema } from '../../src/reconciliation/schema.js';

/** Writes them (their payments journalled under `ref(name)`); their ids by name. */
export async function seedDifferences(
  journal: Journal,
  db: Kysely<ReconciliationSchema>,
  ref: (name: string) => string,
): Promise<Record<'told' | 'ghost' | 'detail', string>> {
  const ids: Record<string, string> = {};
  const at = new Date('2026-11-26T09:00:00Z');
  for (const name of ['told', 'ghost', 'detail']) {
    await journal.intend({
      ref: ref(name),
      kind: 'payment',
      amount: '5000',
      currency: 'UGX',
      payee: '+256772000001',
      channel: 'telegram',
      channelUser: 'u1',
      chat: 'telegram:chat-1',
      role: 'staff',
      flow: 'pay',
      at,
    });
    await journal.answered(ref(name), { serviceId: `pay-${name}`, serviceState: 'new', at });
  }
  await journal.stateReported(ref('told'), { state: 'completed', serviceState: 'processed', source: 'notification' });
  await journal.told(ref('told'), { channel: 'telegram', to: 'telegram:chat-1', text: 'Done', outcome: 'completed' });
  const run = await db
    .insertInto('reconciliation_runs')
    .values({
      from_day: '2026-11-26',
      to_day: '2026-11-26',
      started: at,
      finished: at,
      counts: '{}',
      status: 'differences',
      error: null,
      trigger: 'command',
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const rows = [
    ['told', 'state_differs', 'failed', { state: 'completed' }, { state: 'processed_with_errors' }],
    ['ghost', 'unknown_to_service', 'refused', { state: 'submitted' }, null],
    ['detail', 'detail_differs', null, { state: 'submitted', amount: '5000' }, { state: 'new', amount: '6000' }],
  ] as const;
  for (const [name, outcome, correction, ours, theirs] of rows) {
    const row = await db
      .insertInto('reconciliation_exceptions')
      .values({
        difference: `${outcome}:${ref(name)}`,
        ref: ref(name),
        outcome,
        day: '2026-11-26',
        service_id: `pay-${name}`,
        ours: JSON.stringify(ours),
        theirs: JSON.stringify(theirs),
        differs: JSON.stringify(outcome === 'detail_differs' ? ['amount'] : null),
        correction,
        found_run: run.id,
        found_at: at,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    ids[name] = row.id;
  }
  return ids as Record<'told' | 'ghost' | 'detail', string>;
}
