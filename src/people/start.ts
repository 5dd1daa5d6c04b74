/**
 * The people part of a start: where the directory lives, the policy's import, the refresh in every process,
 * and the operators.
 *
 * - Given the app's database (the journal's: PostgreSQL at `DATABASE_URL`, else PGlite under `DATA_DIR`): the
 *   import and the first read happen before any request.
 * - Without one (a caller that opened none): `DATABASE_URL` is opened at start; neither it nor Redis, the
 *   embedded PGlite under `DATA_DIR` (at start in production, at first use in the demo); Redis without
 *   `DATABASE_URL`: several processes, which one PGlite cannot serve, so the policy alone is the directory and
 *   the page refuses changes (a warning at start says so).
 */
import type { Config } from '../config.js';
import type { AccessPolicy } from '../conversation/calls/access-policy.js';
import { peopleOfPolicy } from '../conversation/calls/access-policy.js';
import { openDatabase, type Database } from '../journal/database.js';
import { migrate } from '../journal/migrate.js';
import type { Logger } from '../log.js';
import type { Limits } from '../conversation/calls/limits.js';
import { DatabaseLimits } from './limits.js';
import { Operators, settingsOperator, type OperatorAccounts } from './operators.js';
import { People } from './people.js';
import { OperatorRequests } from './requests.js';
import type { PeopleSchema } from './schema.js';
import { PeopleSync } from './sync.js';
import type { Kysely } from 'kysely';

export interface PeopleDirectory {
  /**
   * The database's people, operators and limits (daily totals, tries and locks: ./limits.ts), opened (and
   * imported) on first call; null without a database.
   */
  open(): Promise<{ people: People; operators: Operators; limits: Limits; requests: OperatorRequests } | null>;
  /** The operators who may sign in to /ops (null when no OPS_USER / OPS_PASSWORD and no database). */
  operators(): Promise<OperatorAccounts | null>;
  /** Applies a change made in this process at once (the other processes within their next look). */
  changed(): Promise<void>;
  /** Why the directory cannot be changed here, or null when it can. */
  readonly readOnly: string | null;
  close(): Promise<void>;
}

export interface StartPeopleOptions {
  config: Config;
  policy: AccessPolicy;
  logger: Logger;
  /** An open database to use instead of opening one (tests; a start that already opened it). */
  database?: Database;
}

export async function startPeople(o: StartPeopleOptions): Promise<PeopleDirectory> {
  const { config, policy, logger } = o;
  const settingsOps =
    config.OPS_USER && config.OPS_PASSWORD ? settingsOperator(config.OPS_USER, config.OPS_PASSWORD) : null;
  if (!o.database && !config.DATABASE_URL && config.redis) {
    logger.warn(
      'people: REDIS_URL is set without DATABASE_URL, so the access policy alone is the directory of people: set DATABASE_URL to add, suspend and reset people on /ops/people',
    );
    return {
      open: async () => null,
      operators: async () => settingsOps,
      changed: async () => {},
      readOnly: 'set DATABASE_URL to change people here (with REDIS_URL, several processes share one database)',
      close: async () => {},
    };
  }
  let sync: PeopleSync | undefined;
  let database: Database | undefined;
  let opening:
    Promise<{ people: People; operators: Operators; limits: Limits; requests: OperatorRequests }> | undefined;
  const open = () =>
    (opening ??= (async () => {
      database = o.database ?? (await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR }));
      if (!o.database) await migrate(database.db);
      const db = database.db as unknown as Kysely<PeopleSchema>;
      const people = new People(db);
      const operators = new Operators(db);
      // From here on the database keeps and decides daily totals, tries and locks, in every process.
      const limits = new DatabaseLimits(db);
      policy.useLimits(limits);
      const imported = await people.importPolicy(peopleOfPolicy(policy.document));
      if (imported.persons + imported.identities > 0) logger.info(imported, 'people: imported from the access policy');
      if (config.OPS_USER && config.OPS_PASSWORD) await operators.ensure(config.OPS_USER, config.OPS_PASSWORD);
      sync = new PeopleSync({ people, policy, logger });
      await sync.refresh(true);
      sync.start();
      return { people, operators, limits, requests: new OperatorRequests(db) };
    })());
  const eager = Boolean(o.database || config.DATABASE_URL || !config.embeddedSandbox);
  if (eager) await open();
  return {
    open,
    async operators() {
      return (await open()).operators;
    },
    changed: async () => sync?.refresh(),
    readOnly: null,
    async close() {
      await opening?.catch(() => undefined);
      await sync?.stop();
      if (!o.database) await database?.close();
    },
  };
}
