/**
 * Operators: who signs in to /ops, by name and password (scrypt, src/people/secrets.ts). The first comes from
 * OPS_USER / OPS_PASSWORD (written at start when the database has no operator of that name; a password
 * changed there is not overwritten by the setting); the others are added on the People page, or asked for with
 * `npm run operator -- add` (./operator-cli.ts), under a second operator's approval when OPS_DUAL_CONTROL says.
 * Without a database only the OPS_USER operator exists.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import { Journal } from '../journal/journal.js';
import type { Schema } from '../journal/schema.js';
import { PeopleError } from './people.js';
import type { PeopleSchema } from './schema.js';
import { passwordWeakness } from './password-rules.js';
import { hashSecret, secretMatches } from './secrets.js';

/** An operator's name: what the journal records for every change they make. */
export const OPERATOR_NAME = /^[A-Za-z0-9_.@-]{1,64}$/;

/** A password compared against this when the name is unknown: the same work either way. */
const UNKNOWN = hashSecret(randomUUID());

export interface OperatorAccounts {
  /** The operator's name when the password is theirs (and they are active), else null. Same work either way. */
  verify(name: string, password: string): Promise<string | null>;
  /** Every operator's name and status. */
  list(): Promise<Array<{ name: string; status: string; createdBy: string }>>;
  /** Whether this operator may act now (not suspended or removed). */
  isActive?(name: string): Promise<boolean>;
  /** Adds an operator (refused when the name is taken or the password short). Null when operators cannot be added. */
  add?(by: string, name: string, password: string): Promise<void>;
}

/**
 * Checks a new operator's name and password (the strength rule) and hashes the password: what an add, or a
 * request to add one, keeps. Throws a PeopleError naming what is wrong.
 */
export function operatorPasswordHash(name: string, password: string): { name: string; passwordHash: string } {
  if (!OPERATOR_NAME.test(name)) throw new PeopleError('an operator name is letters, digits, _ . @ - (at most 64)');
  const weakness = passwordWeakness(password, name);
  if (weakness) throw new PeopleError(weakness);
  return { name, passwordHash: hashSecret(password) };
}

/** The single operator of the settings, when there is no database. */
export function settingsOperator(user: string, password: string): OperatorAccounts {
  const hash = hashSecret(password);
  return {
    async verify(name, given) {
      const ok = await secretMatches(given, name === user ? hash : UNKNOWN);
      return ok && name === user ? user : null;
    },
    async list() {
      return [{ name: user, status: 'active', createdBy: 'OPS_USER' }];
    },
  };
}

/** Operators in the database. */
export class Operators implements OperatorAccounts {
  private readonly journal: Journal;

  constructor(private readonly db: Kysely<PeopleSchema>) {
    this.journal = new Journal(db as unknown as Kysely<Schema>);
  }

  /** Writes the OPS_USER operator when the database has none of that name (idempotent; processes race safely). */
  async ensure(name: string, password: string): Promise<void> {
    const created = await this.db
      .insertInto('operators')
      .values({ name, password_hash: hashSecret(password), created: new Date(), created_by: 'OPS_USER' })
      .onConflict((oc) => oc.column('name').doNothing())
      .returning('name')
      .execute();
    if (created.length > 0) await this.record(this.db, name, 'operator added', 'OPS_USER');
  }

  async verify(name: string, password: string): Promise<string | null> {
    const row = OPERATOR_NAME.test(name)
      ? await this.db
          .selectFrom('operators')
          .select(['name', 'password_hash', 'status'])
          .where('name', '=', name)
          .executeTakeFirst()
      : undefined;
    const ok = await secretMatches(password, row?.password_hash ?? UNKNOWN);
    return ok && row && row.status === 'active' ? row.name : null;
  }

  async list(): Promise<Array<{ name: string; status: string; createdBy: string }>> {
    const rows = await this.db
      .selectFrom('operators')
      .select(['name', 'status', 'created_by'])
      .orderBy('name')
      .execute();
    return rows.map((r) => ({ name: r.name, status: r.status, createdBy: r.created_by }));
  }

  async add(by: string, name: string, password: string): Promise<void> {
    await this.addHashed(by, operatorPasswordHash(name, password));
  }

  /** Adds an operator whose password was checked and hashed by {@link operatorPasswordHash} (an approved request). */
  async addHashed(by: string, account: { name: string; passwordHash: string }): Promise<void> {
    const { name, passwordHash } = account;
    if (!OPERATOR_NAME.test(name)) throw new PeopleError('an operator name is letters, digits, _ . @ - (at most 64)');
    await this.db.transaction().execute(async (trx) => {
      const created = await trx
        .insertInto('operators')
        .values({ name, password_hash: passwordHash, created: new Date(), created_by: by })
        .onConflict((oc) => oc.column('name').doNothing())
        .returning('name')
        .execute();
      if (created.length === 0) throw new PeopleError(`there is already an operator ${name}`, 409);
      await this.record(trx, name, 'operator added', `operator:${by}`);
    });
  }

  async isActive(name: string): Promise<boolean> {
    const row = await this.db.selectFrom('operators').select('status').where('name', '=', name).executeTakeFirst();
    return !row || row.status === 'active';
  }

  /**
   * Suspends, reactivates or removes an operator (removed is for good: the name stays, never signs in again).
   * Their sessions end at their next request (src/ops/access.ts asks {@link isActive}).
   */
  async setStatus(by: string, name: string, status: 'active' | 'suspended' | 'removed'): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const row = await trx
        .selectFrom('operators')
        .select('status')
        .where('name', '=', name)
        .forUpdate()
        .executeTakeFirst();
      if (!row) throw new PeopleError(`no operator ${name}`, 404);
      if (row.status === 'removed') throw new PeopleError(`operator ${name} was removed`, 409);
      if (row.status === status) return;
      await trx.updateTable('operators').set({ status }).where('name', '=', name).execute();
      await this.record(trx, name, `operator ${status === 'active' ? 'reactivated' : status}`, by);
    });
  }

  /** Whether an operator of this name exists (any status). */
  async exists(name: string): Promise<boolean> {
    return Boolean(await this.db.selectFrom('operators').select('name').where('name', '=', name).executeTakeFirst());
  }

  private async record(
    db: Kysely<PeopleSchema> | Transaction<PeopleSchema>,
    name: string,
    action: string,
    by: string,
  ): Promise<void> {
    await this.journal.append(
      {
        ref: `operator:${name}`,
        type: 'operator',
        source: 'operator',
        key: randomUUID(),
        at: new Date(),
        data: { action, by, after: { name } },
      },
      db as unknown as Transaction<Schema>,
    );
  }
}
