/**
 * The checks of outcomes still owed to people, worked from the database (src/journal/owed.ts), so a Redis loss
 * (the follow-up queue, our records, the dedup marks) loses none. Every few seconds one process at a time (the
 * leader: an advisory lock) reads the open rows due, oldest first; each is claimed (a conditional update, so it
 * is checked once however many processes try) and:
 * - already told a final outcome (the journal's `told_state`): settled, no read spent and nobody told twice,
 *   whatever the dedup marks in Redis still hold;
 * - else our record is put back in the store if Redis lost it (the row's copy, with the journal's answer: the
 *   service's id, a 409 on our own key) and the follow-up's check runs (./follow-up.ts: ONE read through the
 *   read budget, what it finds told through the dispatcher and its marks, the state journalled; an "already
 *   submitted" the service holds nothing of is journalled refused and told so). A check that asks for a later
 *   one moves the row to it (FollowUpOptions.schedule writes the row); one that does not settles it, with the
 *   operation's state. A check that fails leaves the row claimed: it is tried again when its claim runs out,
 *   later each time.
 * Only rows its build may read are read and claimed (its build's, an earlier one's, or of none): a later
 * build's row is left to that build's poller, and worked here only once that build has been gone a while
 * (src/journal/owed.ts LATER_BUILD_WAITS_MS).
 * Redis may hold a copy of anything here; PostgreSQL decides what is still owed.
 */
import type { Made, MadeKind, MadeRecords } from '../conversation/calls/made-records.js';
import { currentBuild } from '../conversation/flow/build.js';
import type { OwedDue, OwedOutcomes } from '../journal/owed.js';
import { FINAL_STATES, type OperationState } from '../journal/schema.js';
import type { Logger } from '../log.js';
import { within } from '../within.js';
import type { FollowUp } from './follow-up.js';

export interface OwedPollerOptions {
  owed: OwedOutcomes;
  made: MadeRecords;
  followUp: Pick<FollowUp, 'check'>;
  logger: Logger;
  /** Between ticks, ms. Default 5000: the first check is minutes after an intent, so a few seconds add nothing. */
  everyMs?: number;
  /** Most rows checked in one tick. Default 20 (each check waits for the read budget, 30 reads a minute). */
  batch?: number;
  /** How long a claimed row is left to its checker before another try, ms; times its tries. Default 60000. */
  claimMs?: number;
  /** Clock in ms. Default Date.now. */
  now?: () => number;
  /** This process's build (src/conversation/flow/build.ts): a later build's rows are left. Default: this build. */
  build?: number;
}

/** How long stop() waits for a tick under way, ms. */
const STOP_WAIT_MS = 2000;

/** States after which the service's answer is known: the record counts as accepted (the follow-up reads it by id or list). */
const ANSWERED: readonly OperationState[] = ['submitted', 'completed', 'failed'];

/** Our record as the database keeps it: the row's copy, with what the journal learned of the answer since. */
export function recordOfOwed(row: OwedDue): Made {
  const kept = row.owed as Partial<Made>;
  const created = typeof kept.created === 'number' ? kept.created : new Date(row.created).getTime();
  const accepted = row.reason === 'conflict' || row.service_id !== null || ANSWERED.includes(row.state);
  return {
    kind: (kept.kind ?? 'payment') as MadeKind,
    ref: row.ref,
    chat: row.chat,
    amount: String(kept.amount ?? ''),
    currency: String(kept.currency ?? ''),
    payee: String(kept.payee ?? ''),
    ...(kept.recipient ? { recipient: kept.recipient } : {}),
    ...(kept.series ? { series: kept.series } : {}),
    created,
    ...(row.service_id ? { id: row.service_id } : {}),
    ...(row.short_ref ? { shortRef: row.short_ref } : {}),
    ...(accepted ? { accepted: true as const } : {}),
    ...(row.state === 'refused' ? { refused: true as const } : {}),
  };
}

export interface OwedPoller {
  /** One tick: the due rows checked, if this process leads. Resolves to how many were settled (null: not leader). */
  tick(): Promise<number | null>;
  start(): void;
  /** Stops ticking and waits (a little) for a tick under way. */
  stop(): Promise<void>;
}

export function owedPoller(o: OwedPollerOptions): OwedPoller {
  const { owed, logger } = o;
  const now = o.now ?? Date.now;
  const claimMs = o.claimMs ?? 60_000;
  const build = o.build ?? currentBuild();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();
  let busy = false;

  /** One due row: claimed, then settled as told, or checked. True when it was settled. */
  async function one(row: OwedDue): Promise<boolean> {
    const claimed = await owed.claim(row.ref, new Date(now()), claimMs, build);
    if (!claimed) return false;
    if (row.told_state && (FINAL_STATES as readonly string[]).includes(row.told_state))
      return owed.settle(claimed, new Date(now()));
    await o.made.restore(recordOfOwed({ ...row, ...claimed }));
    await o.followUp.check({ ref: row.ref, step: claimed.step });
    return owed.settle(claimed, new Date(now()));
  }

  async function tick(): Promise<number | null> {
    if (busy) return null;
    busy = true;
    try {
      return await owed.asLeader(async () => {
        const rows = await owed.due(new Date(now()), o.batch ?? 20, build);
        let settled = 0;
        for (const row of rows) {
          try {
            if (await one(row)) settled += 1;
          } catch (err) {
            logger.warn(
              { err: String(err), ref: row.ref, step: row.step },
              'owed outcome not checked; tried again when its claim runs out',
            );
          }
        }
        return settled;
      });
    } finally {
      busy = false;
    }
  }

  return {
    tick,
    start() {
      const go = () => {
        running = tick().catch((err: unknown) =>
          logger.warn({ err: String(err) }, 'owed outcomes not read; tried again at the next tick'),
        );
      };
      timer = setInterval(go, o.everyMs ?? 5000);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      timer = undefined;
      // A check waiting for the read budget is not waited for long: its row stays claimed, and is checked again.
      await within(running, STOP_WAIT_MS);
    },
  };
}
