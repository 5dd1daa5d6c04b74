/**
 * The product under dual control for the tests of /ops, from outside: started on a fresh database of the
 * PostgreSQL server with `OPS_DUAL_CONTROL=all`, the lead as `OPS_USER`, and a second operator added as the
 * deployment would add them (no one operator can, alone, on /ops). Sign them in with ./ops-session.ts.
 *
 * ```ts
 * let ops: TwoOperators;
 * beforeAll(async () => {
 *   ops = await startWithTwoOperators('my_test', { OPS_TOKEN, ACCESS_POLICY: JSON.stringify(POLICY) });
 * });
 * afterAll(() => ops?.stop());
 * ```
 */
import type { Kysely } from 'kysely';
import { startApp, type AppOptions, type RunningApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase, type Database } from '../../src/journal/database.js';
import { Operators } from '../../src/people/operators.js';
import type { PeopleSchema } from '../../src/people/schema.js';
import { serverDatabase, type ServerDatabase } from '../journal/databases.js';

export interface Operator {
  name: string;
  password: string;
}

/** The two operators unless a test names its own. */
export const LEAD: Operator = { name: 'ops-lead', password: 'a long operator password' };
export const SECOND: Operator = { name: 'bo', password: 'another quite long passphrase' };

export interface TwoOperators {
  app: RunningApp;
  /** Another connection to the product's database, to seed it and read what the product wrote. */
  direct: Database;
  database: ServerDatabase;
  /** Stops the product, closes `direct` and drops the database. */
  stop(): Promise<void>;
}

export interface TwoOperatorsOptions {
  lead?: Operator;
  second?: Operator;
  app?: AppOptions;
}

/** Starts the product on a database named after `name`, with `env` beside what dual control needs. */
export async function startWithTwoOperators(
  name: string,
  env: Record<string, string> = {},
  options: TwoOperatorsOptions = {},
): Promise<TwoOperators> {
  const lead = options.lead ?? LEAD;
  const second = options.second ?? SECOND;
  const database = await serverDatabase(name);
  let app: RunningApp | undefined;
  let direct: Database | undefined;
  const stop = async () => {
    await app?.stop();
    await direct?.close();
    await database.drop();
  };
  try {
    app = await startApp(
      loadConfig({
        PORT: '0',
        LOG_LEVEL: 'silent',
        OPS_USER: lead.name,
        OPS_PASSWORD: lead.password,
        OPS_DUAL_CONTROL: 'all',
        DATABASE_URL: database.url,
        ...env,
      }),
      options.app,
    );
    direct = await openDatabase({ databaseUrl: database.url, dataDir: '/tmp' });
    await new Operators(direct.db as unknown as Kysely<PeopleSchema>).add(lead.name, second.name, second.password);
  } catch (err) {
    await stop();
    throw err;
  }
  return { app, direct, database, stop };
}
