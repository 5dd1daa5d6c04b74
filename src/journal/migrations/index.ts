/**
 * Every migration, listed here by name (not read from the folder, so the compiled build needs no file
 * lookups). Names sort in the order they run. Numbers: 0001-0009 the journal, 0010-0019 reconciliation,
 * 0100-0199 people, 0200-0209 limits and lock-outs, 0210-0219 approvals, 0300-0309 the journal's enforcement
 * (after every table it guards), 0310-0319 the outcomes owed to people, 0320-0329 limits written with the
 * intent, 0340 the short ref, 0350-0359 signed events out, 0370-0379 operators' dual control, 0410
 * reconciliation exceptions, 0420-0429 the operators' audit, 0450-0459 limits taken again by a correction,
 * 0460-0469 the build that wrote an owed outcome. Add a line, never change or reorder one that has landed.
 */
import type { Migration, MigrationProvider } from 'kysely';
import * as journal0001 from './0001_journal.js';
import * as reconciliation0010 from './0010_reconciliation.js';
import * as people0100 from './0100_people.js';
import * as people0101 from './0101_pin_changes.js';
import * as limits0200 from './0200_limits.js';
import * as approvals0210 from './0210_held_payments.js';
import * as journal0300 from './0300_append_only.js';
import * as journal0301 from './0301_chain.js';
import * as owed0310 from './0310_owed_outcomes.js';
import * as limits0320 from './0320_limits_with_intent.js';
import * as journal0340 from './0340_short_ref.js';
import * as eventsOut0350 from './0350_events_out.js';
import * as people0370 from './0370_operator_requests.js';
import * as reconciliation0400 from './0400_reconciliation_window.js';
import * as reconciliation0410 from './0410_reconciliation_exceptions.js';
import * as ops0420 from './0420_operator_audit.js';
import * as limits0450 from './0450_limits_taken_again.js';
import * as owed0460 from './0460_owed_outcomes_build.js';

/** Name -> migration, in order. */
export const MIGRATIONS: Record<string, Migration> = {
  '0001_journal': journal0001,
  '0010_reconciliation': reconciliation0010,
  '0100_people': people0100,
  '0101_pin_changes': people0101,
  '0200_limits': limits0200,
  '0210_held_payments': approvals0210,
  '0300_append_only': journal0300,
  '0301_chain': journal0301,
  '0310_owed_outcomes': owed0310,
  '0320_limits_with_intent': limits0320,
  '0340_short_ref': journal0340,
  '0350_events_out': eventsOut0350,
  '0370_operator_requests': people0370,
  '0400_reconciliation_window': reconciliation0400,
  '0410_reconciliation_exceptions': reconciliation0410,
  '0420_operator_audit': ops0420,
  '0450_limits_taken_again': limits0450,
  '0460_owed_outcomes_build': owed0460,
};

/** Kysely's provider over the list above. */
export const migrationProvider: MigrationProvider = {
  getMigrations: async () => MIGRATIONS,
};
