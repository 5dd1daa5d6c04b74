/**
 * The directory of people in the database: what the People page, the policy import, Change PIN and chat
 * linking write, and what every process reads whole into a {@link Directory} (./sync.ts) when the people
 * version moves.
 *
 * Every change is one transaction: the person's row (locked while it changes), one event in the journal
 * (`operation_events`, ref `person:<id>`, type `person`, data `{ action, by, before, after }`) and the people
 * version moved by one. What the journal keeps of a person is their name, role, status, identities, preferred
 * chat and whether a PIN is set, must change or is locked: never a PIN, a code or a hash.
 *
 * Which wins between the page and the policy: the import adds what the database does not have (a person, an
 * identity, a PIN for a person who has none and was never reset) and changes nothing it has, so a change made
 * on the page is never undone by a restart. Role definitions and `*` rules are the policy's alone.
 */
import { createHash, randomInt, randomUUID } from 'node:crypto';
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Channel } from '../conversation/types.js';
import { Journal } from '../journal/journal.js';
import type { Schema } from '../journal/schema.js';
import { CHANNELS, Directory, identityId, type Identity, type Person, type Wildcard } from './directory.js';
import { LINK_LOCATOR_LENGTH } from '../journal/migrations/0320_limits_with_intent.js';
import type { PeopleSchema, PersonsTable } from './schema.js';
import { hashSecret, normaliseCode, randomCode, secretMatches } from './secrets.js';

/** How long a one-time PIN code lives: 24 hours. */
export const PIN_CODE_HOURS = 24;
/** Digits of a one-time PIN code: typed on a phone's keypad. */
export const PIN_CODE_DIGITS = 8;
/** How long a change of PIN may take, from the old PIN or the code to the new PIN typed twice: 10 minutes. */
export const PIN_CHANGE_MINUTES = 10;
/** How long a link code lives: 10 minutes. */
export const LINK_CODE_MINUTES = 10;
/** Characters of a link code. */
export const LINK_CODE_LENGTH = 10;
/**
 * Wrong guesses one link code takes, from whichever accounts, before it is used up: a guess names the code it
 * aims at by its first {@link LINK_LOCATOR_LENGTH} characters, and the rest is compared at most this often.
 */
export const LINK_CODE_TRIES = 5;

/** A change refused, with the reason for the operator or the person. */
export class PeopleError extends Error {
  override name = 'PeopleError';
  constructor(
    message: string,
    readonly status: 400 | 403 | 404 | 409 = 400,
  ) {
    super(message);
  }
}

/** A person as the page lists them, with their identities. */
export interface PersonView {
  id: string;
  name: string;
  role: string;
  status: 'active' | 'suspended';
  pin: 'set' | 'none' | 'must change';
  pinLockedUntil: string | null;
  /** Why the PIN is locked (`wrong PIN`, `wrong one-time code`), while it is. */
  pinLockedWhy?: string | null;
  preferredChat: string | null;
  identities: Array<{ channel: Channel; userId: string }>;
}

/** One change of a person, as the page lists it. */
export interface PersonChange {
  at: string;
  action: string;
  by: string;
  before: Partial<PersonView> | null;
  after: Partial<PersonView> | null;
}

type Row = {
  [K in keyof PersonsTable]: PersonsTable[K] extends { __select__: infer S } ? S : PersonsTable[K];
} & Record<string, unknown>;
type Db = Kysely<PeopleSchema> | Transaction<PeopleSchema>;

const linkLookup = (code: string): string =>
  createHash('sha256')
    .update(`momo-link:${normaliseCode(code)}`)
    .digest('hex');
const toMs = (value: unknown): number | undefined =>
  value === null || value === undefined ? undefined : new Date(value as string).getTime();

export interface PeopleOptions {
  /** Clock in ms. Default Date.now. */
  now?: () => number;
}

export class People {
  private readonly journal: Journal;
  private readonly now: () => number;

  constructor(
    readonly db: Kysely<PeopleSchema>,
    options: PeopleOptions = {},
  ) {
    this.journal = new Journal(db as unknown as Kysely<Schema>);
    this.now = options.now ?? Date.now;
  }

  /** The people version: moves by one with every change. */
  async version(): Promise<number> {
    const row = await this.db.selectFrom('people_version').select('version').where('id', '=', 1).executeTakeFirst();
    return Number(row?.version ?? 0);
  }

  /** Reads the whole directory, consistently (one snapshot of the database). */
  async load(wildcards: Partial<Record<Channel, Wildcard>>): Promise<Directory> {
    return this.db
      .transaction()
      .setIsolationLevel('repeatable read')
      .execute(async (trx) => {
        const version = Number(
          (await trx.selectFrom('people_version').select('version').where('id', '=', 1).executeTakeFirst())?.version ??
            0,
        );
        const rows = await trx.selectFrom('persons').selectAll().execute();
        const identities = await trx
          .selectFrom('person_identities')
          .select(['channel', 'user_id', 'person_id'])
          .execute();
        return new Directory(
          version,
          rows.map((row) => personOf(row as Row)),
          identities.map((i) => ({ channel: i.channel as Channel, userId: i.user_id, person: i.person_id })),
          wildcards,
        );
      });
  }

  /**
   * Imports the policy's persons and identities (see the file comment: it adds, never changes). Idempotent:
   * a second import of the same policy writes nothing. Processes starting together import one at a time.
   */
  async importPolicy(input: {
    persons: Person[];
    identities: Identity[];
  }): Promise<{ persons: number; identities: number }> {
    return this.db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(hashtext('momo-chat:people-import'))`.execute(trx);
      let persons = 0;
      let identities = 0;
      const at = new Date(this.now());
      for (const person of input.persons) {
        const mine = input.identities.filter((i) => i.person === person.id);
        const existing = await trx.selectFrom('persons').selectAll().where('id', '=', person.id).executeTakeFirst();
        if (!existing) {
          await trx
            .insertInto('persons')
            .values({
              id: person.id,
              name: person.name,
              role: person.role,
              status: 'active',
              pin_hash: person.pin ?? null,
              source: 'policy',
              created: at,
              updated: at,
            })
            .execute();
          persons += 1;
        } else if (!existing.pin_hash && !existing.pin_must_change && person.pin) {
          await trx
            .updateTable('persons')
            .set({ pin_hash: person.pin, updated: at })
            .where('id', '=', person.id)
            .execute();
        }
        const added: string[] = [];
        for (const identity of mine) {
          const inserted = await trx
            .insertInto('person_identities')
            .values({ channel: identity.channel, user_id: identity.userId, person_id: person.id, created: at })
            .onConflict((oc) => oc.columns(['channel', 'user_id']).doNothing())
            .returning('user_id')
            .execute();
          if (inserted.length > 0) added.push(`${identity.channel}:${identity.userId}`);
        }
        identities += added.length;
        if (!existing || added.length > 0) {
          await this.record(
            trx,
            person.id,
            existing ? 'identities imported' : 'imported',
            'policy',
            existing ? await this.view(trx, person.id, existing as Row, true) : null,
          );
        }
      }
      if (persons + identities > 0) await this.bump(trx);
      return { persons, identities };
    });
  }

  /** Every person with their identities, by name. */
  async list(): Promise<PersonView[]> {
    const rows = await this.db.selectFrom('persons').selectAll().orderBy('name').orderBy('id').execute();
    const identities = await this.db
      .selectFrom('person_identities')
      .select(['channel', 'user_id', 'person_id'])
      .orderBy('channel')
      .orderBy('user_id')
      .execute();
    return rows.map((row) =>
      viewOf(
        row as Row,
        identities.filter((i) => i.person_id === row.id),
      ),
    );
  }

  /** One person, or undefined. */
  async get(id: string): Promise<PersonView | undefined> {
    const row = await this.db.selectFrom('persons').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? this.view(this.db, id, row as Row) : undefined;
  }

  /** The changes of a person, oldest first. */
  async history(id: string): Promise<PersonChange[]> {
    const events = await this.journal.timeline(`person:${id}`);
    return events.map((e) => {
      const data = e.data as {
        action?: string;
        by?: string;
        before?: Partial<PersonView> | null;
        after?: Partial<PersonView> | null;
      };
      return {
        at: new Date(e.at).toISOString(),
        action: data.action ?? e.type,
        by: data.by ?? e.source,
        before: data.before ?? null,
        after: data.after ?? null,
      };
    });
  }

  /** Adds a person with their identities; refused when one of them already belongs to someone. */
  async add(
    by: string,
    input: {
      name: string;
      role: string;
      identities: Array<{ channel: Channel; userId: string }>;
      preferredChat?: string;
    },
  ): Promise<PersonView> {
    const id = `p-${randomUUID().slice(0, 8)}`;
    const at = new Date(this.now());
    return this.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('persons')
        .values({
          id,
          name: input.name,
          role: input.role,
          status: 'active',
          preferred_chat: input.preferredChat ?? null,
          source: 'page',
          created: at,
          updated: at,
        })
        .execute();
      for (const identity of input.identities)
        await this.insertIdentity(trx, id, identity.channel, identity.userId, at);
      const after = await this.view(trx, id);
      await this.record(trx, id, 'added', by, null, after);
      await this.bump(trx);
      return after;
    });
  }

  /** Suspends or reactivates a person. */
  setStatus(by: string, id: string, status: 'active' | 'suspended'): Promise<PersonView> {
    return this.change(by, id, status === 'suspended' ? 'suspended' : 'reactivated', (row) =>
      row.status === status ? null : { status },
    );
  }

  /** Gives a person another role (the caller checks the role exists). */
  setRole(by: string, id: string, role: string): Promise<PersonView> {
    return this.change(by, id, 'role changed', (row) => (row.role === role ? null : { role }));
  }

  /** Clears the lock of the PIN, and the wrong tries counted (src/people/limits.ts), in one change. */
  unlockPin(by: string, id: string): Promise<PersonView> {
    return this.change(by, id, 'PIN unlocked', async (_row, trx) => {
      await clearPinTries(trx, id);
      return { pin_locked_until: null, pin_locked_why: null };
    });
  }

  /**
   * Wrong tries reached the limit (src/people/limits.ts): the PIN is locked until `until` (ms), and why;
   * journalled as the person's own change. Nothing for someone the directory does not hold (a `*` rule's
   * person: their tries alone lock them); false then.
   */
  async lockPin(id: string, until: number, why: string): Promise<boolean> {
    const known = await this.db.selectFrom('persons').select('id').where('id', '=', id).executeTakeFirst();
    if (!known) return false;
    await this.change('person', id, `PIN locked: ${why}`, () => ({
      // A Date is what the column takes (Row types the column as Kysely declares it).
      pin_locked_until: new Date(until) as unknown as Row['pin_locked_until'],
      pin_locked_why: why,
    }));
    return true;
  }

  /**
   * Resets a person's PIN: the old one stops working, and a one-time code of {@link PIN_CODE_DIGITS} digits,
   * valid {@link PIN_CODE_HOURS} hours and once, lets them set a new one. Returns the code, for the person alone
   * (src/people/code-delivery.ts), kept only as a hash. Earlier codes of the person stop working.
   */
  async resetPin(by: string, id: string): Promise<{ code: string; person: PersonView }> {
    const code = Array.from({ length: PIN_CODE_DIGITS }, () => String(randomInt(10))).join('');
    const codeHash = hashSecret(code);
    const person = await this.change(by, id, 'PIN reset', async (_row, trx) => {
      // A change of PIN under way (with the old PIN, or an older code) ends here: it cannot undo the reset.
      await trx.deleteFrom('pin_changes').where('person_id', '=', id).execute();
      await trx
        .updateTable('person_codes')
        .set({ used_at: new Date(this.now()) })
        .where('person_id', '=', id)
        .where('purpose', '=', 'pin')
        .where('used_at', 'is', null)
        .execute();
      await trx
        .insertInto('person_codes')
        .values({
          person_id: id,
          purpose: 'pin',
          code_hash: codeHash,
          expires_at: new Date(this.now() + PIN_CODE_HOURS * 3600_000),
          created: new Date(this.now()),
        })
        .execute();
      await clearPinTries(trx, id);
      return { pin_hash: null, pin_must_change: true, pin_locked_until: null, pin_locked_why: null };
    });
    return { code, person };
  }

  /**
   * Starts a person's change of their own PIN, once they proved who they are: `codeId` is the one-time code of
   * a reset they typed ({@link matchPinCode}), none when they typed their old PIN (the caller checked it). A
   * change already under way starts again. It lasts {@link PIN_CHANGE_MINUTES} minutes.
   */
  async beginPinChange(id: string, codeId?: string): Promise<void> {
    const at = new Date(this.now());
    const row = {
      code_id: codeId ?? null,
      pin_hash: null,
      expires_at: new Date(this.now() + PIN_CHANGE_MINUTES * 60_000),
      created: at,
    };
    await this.db
      .insertInto('pin_changes')
      .values({ person_id: id, ...row })
      .onConflict((oc) => oc.column('person_id').doUpdateSet(row))
      .execute();
  }

  /**
   * The one-time PIN code of the person that `code` is, unused: its id, or why not (`wrong` for no such code or
   * a used one, `expired` for one past its {@link PIN_CODE_HOURS} hours). Uses nothing up.
   */
  async matchPinCode(id: string, code: string): Promise<{ codeId: string } | 'wrong' | 'expired'> {
    const codes = await this.db
      .selectFrom('person_codes')
      .select(['id', 'code_hash', 'expires_at'])
      .where('person_id', '=', id)
      .where('purpose', '=', 'pin')
      .where('used_at', 'is', null)
      .execute();
    let expired = false;
    for (const row of codes) {
      if (!(await secretMatches(code, row.code_hash))) continue;
      if (new Date(row.expires_at).getTime() > this.now()) return { codeId: String(row.id) };
      expired = true;
    }
    return expired ? 'expired' : 'wrong';
  }

  /**
   * Keeps the hash of the new PIN typed the first time (the caller checked it is not weak), for the change
   * under way; false when none is (never started, or past its minutes).
   */
  async draftPin(id: string, pinHash: string): Promise<boolean> {
    const updated = await this.db
      .updateTable('pin_changes')
      .set({ pin_hash: pinHash })
      .where('person_id', '=', id)
      .where('expires_at', '>', new Date(this.now()))
      .executeTakeFirst();
    return Number(updated.numUpdatedRows) > 0;
  }

  /**
   * The new PIN typed again: the same as the draft makes it the person's PIN (using up the one-time code the
   * change started with, which must still be unused and unexpired), and the change ends. `mismatch` drops the
   * draft (the new PIN is typed twice again); `expired` when no change is under way or its code is gone.
   */
  async finishPinChange(id: string, pin: string): Promise<'set' | 'mismatch' | 'expired'> {
    return this.db.transaction().execute(async (trx) => {
      const change = await trx
        .selectFrom('pin_changes')
        .selectAll()
        .where('person_id', '=', id)
        .forUpdate()
        .executeTakeFirst();
      if (!change || !change.pin_hash || new Date(change.expires_at).getTime() <= this.now()) return 'expired';
      if (!(await secretMatches(pin, change.pin_hash))) {
        await trx.updateTable('pin_changes').set({ pin_hash: null }).where('person_id', '=', id).execute();
        return 'mismatch';
      }
      if (change.code_id !== null) {
        const used = await trx
          .updateTable('person_codes')
          .set({ used_at: new Date(this.now()) })
          .where('id', '=', change.code_id)
          .where('used_at', 'is', null)
          .where('expires_at', '>', new Date(this.now()))
          .executeTakeFirst();
        if (Number(used.numUpdatedRows) === 0) return 'expired';
      }
      await trx.deleteFrom('pin_changes').where('person_id', '=', id).execute();
      await clearPinTries(trx, id);
      const pinHash = change.pin_hash;
      await this.changeIn(trx, 'person', id, change.code_id ? 'PIN set with a one-time code' : 'PIN changed', () => ({
        pin_hash: pinHash,
        pin_must_change: false,
        pin_locked_until: null,
        pin_locked_why: null,
      }));
      return 'set';
    });
  }

  /**
   * A code of {@link LINK_CODE_LENGTH} characters that links a chat account to the person, for
   * {@link LINK_CODE_MINUTES} minutes and once. Earlier link codes of the person stop working.
   */
  async linkCode(id: string): Promise<string> {
    const code = randomCode(LINK_CODE_LENGTH);
    const at = new Date(this.now());
    await this.db.transaction().execute(async (trx) => {
      await trx
        .updateTable('person_codes')
        .set({ used_at: at })
        .where('person_id', '=', id)
        .where('purpose', '=', 'link')
        .where('used_at', 'is', null)
        .execute();
      const lookup = linkLookup(code);
      await trx
        .insertInto('person_codes')
        .values({
          person_id: id,
          purpose: 'link',
          code_hash: lookup,
          lookup,
          locator: code.slice(0, LINK_LOCATOR_LENGTH),
          expires_at: new Date(this.now() + LINK_CODE_MINUTES * 60_000),
          created: at,
        })
        .execute();
    });
    return code;
  }

  /**
   * Links the chat identity to the person whose link code this is (once, before it expires). Null for a code
   * that is unknown, used or expired, all alike; a PeopleError when the identity already belongs to someone. A
   * wrong code counts a wrong try on the outstanding link codes its first characters name; the
   * {@link LINK_CODE_TRIES}th uses the code up, so no more guesses are compared with it, from any account.
   */
  async useLinkCode(code: string, channel: Channel, userId: string): Promise<PersonView | null> {
    const at = new Date(this.now());
    return this.db.transaction().execute(async (trx) => {
      const used = await trx
        .updateTable('person_codes')
        .set({ used_at: at })
        .where('lookup', '=', linkLookup(code))
        .where('purpose', '=', 'link')
        .where('used_at', 'is', null)
        .where('expires_at', '>', at)
        .returning('person_id')
        .executeTakeFirst();
      if (!used) {
        // A wrong guess at the outstanding codes it names (their first characters): counted on each, whichever
        // account guesses, and the one that reaches the limit is used up.
        await trx
          .updateTable('person_codes')
          .set((eb) => ({
            wrong_tries: eb('wrong_tries', '+', 1),
            used_at: sql<Date | null>`case when wrong_tries + 1 >= ${LINK_CODE_TRIES} then ${at}::timestamptz else null end`,
          }))
          .where('locator', '=', normaliseCode(code).slice(0, LINK_LOCATOR_LENGTH))
          .where('purpose', '=', 'link')
          .where('used_at', 'is', null)
          .where('expires_at', '>', at)
          .execute();
        return null;
      }
      return this.changeIn(trx, 'person', used.person_id, 'identity linked', async (row, t) => {
        await this.insertIdentity(t, used.person_id, channel, userId, at);
        return row.preferred_chat ? {} : { preferred_chat: `${channel}:${identityId(channel, userId)}` };
      });
    });
  }

  private async insertIdentity(trx: Db, person: string, channel: Channel, userId: string, at: Date): Promise<void> {
    if (!CHANNELS.includes(channel)) throw new PeopleError(`unknown channel ${channel}`);
    const id = identityId(channel, userId);
    const inserted = await trx
      .insertInto('person_identities')
      .values({ channel, user_id: id, person_id: person, created: at })
      .onConflict((oc) => oc.columns(['channel', 'user_id']).doNothing())
      .returning('person_id')
      .execute();
    if (inserted.length === 0) throw new PeopleError(`${channel} ${id} already belongs to someone`, 409);
  }

  private change(
    by: string,
    id: string,
    action: string,
    patch: (row: Row, trx: Db) => Partial<Row> | null | Promise<Partial<Row> | null>,
  ): Promise<PersonView> {
    return this.db.transaction().execute((trx) => this.changeIn(trx, by, id, action, patch));
  }

  /** One change of one person inside `trx`: row locked, changed, journalled, version moved (nothing when `patch` is null). */
  private async changeIn(
    trx: Db,
    by: string,
    id: string,
    action: string,
    patch: (row: Row, trx: Db) => Partial<Row> | null | Promise<Partial<Row> | null>,
  ): Promise<PersonView> {
    const row = (await trx.selectFrom('persons').selectAll().where('id', '=', id).forUpdate().executeTakeFirst()) as
      Row | undefined;
    if (!row) throw new PeopleError('no such person', 404);
    const before = await this.view(trx, id, row);
    const change = await patch(row, trx);
    if (!change) return before;
    await trx
      .updateTable('persons')
      .set({ ...(change as object), updated: new Date(this.now()) })
      .where('id', '=', id)
      .execute();
    const after = await this.view(trx, id);
    await this.record(trx, id, action, by, before, after);
    await this.bump(trx);
    return after;
  }

  private async view(db: Db, id: string, row?: Row, identitiesOnly = false): Promise<PersonView> {
    const current =
      row ?? ((await db.selectFrom('persons').selectAll().where('id', '=', id).executeTakeFirstOrThrow()) as Row);
    const identities = await db
      .selectFrom('person_identities')
      .select(['channel', 'user_id', 'person_id'])
      .where('person_id', '=', id)
      .orderBy('channel')
      .orderBy('user_id')
      .execute();
    const view = viewOf(current, identities);
    return identitiesOnly ? ({ identities: view.identities } as PersonView) : view;
  }

  private async record(
    trx: Db,
    id: string,
    action: string,
    by: string,
    before: Partial<PersonView> | null,
    after?: Partial<PersonView> | null,
  ): Promise<void> {
    const current = after === undefined ? await this.view(trx, id) : after;
    await this.journal.append(
      {
        ref: `person:${id}`,
        type: 'person',
        source: by === 'policy' ? 'policy' : by === 'person' ? 'person' : 'operator',
        key: randomUUID(),
        at: new Date(this.now()),
        data: { action, by, before, after: current },
      },
      trx as unknown as Transaction<Schema>,
    );
  }

  private async bump(trx: Db): Promise<void> {
    await sql`update people_version set version = version + 1 where id = 1`.execute(trx);
  }
}

/** Forgets a person's wrong PIN and one-time code tries (`secret_tries`, scope `pin`: src/people/limits.ts). */
async function clearPinTries(trx: Db, id: string): Promise<void> {
  await trx.deleteFrom('secret_tries').where('scope', '=', 'pin').where('subject', '=', id).execute();
}

function personOf(row: Row): Person {
  const locked = toMs(row.pin_locked_until);
  return {
    id: row.id,
    name: row.name,
    role: row.role,
    status: row.status,
    ...(row.pin_hash ? { pin: row.pin_hash } : {}),
    ...(row.pin_must_change ? { pinMustChange: true } : {}),
    ...(locked !== undefined ? { pinLockedUntil: locked } : {}),
    ...(row.preferred_chat ? { preferredChat: row.preferred_chat } : {}),
  };
}

function viewOf(row: Row, identities: Array<{ channel: string; user_id: string }>): PersonView {
  const locked = toMs(row.pin_locked_until);
  return {
    id: row.id,
    name: row.name,
    role: row.role,
    status: row.status,
    pin: row.pin_must_change ? 'must change' : row.pin_hash ? 'set' : 'none',
    pinLockedUntil: locked !== undefined ? new Date(locked).toISOString() : null,
    ...(locked !== undefined && row.pin_locked_why ? { pinLockedWhy: row.pin_locked_why } : {}),
    preferredChat: row.preferred_chat,
    identities: identities.map((i) => ({ channel: i.channel as Channel, userId: i.user_id })),
  };
}
