/**
 * The access policy: who may use which flows, how much they may move, and the USSD PIN.
 *
 * Format (ACCESS_POLICY as JSON text or a file path, or ACCESS_POLICY_FILE):
 *
 *   {
 *     "roles": {
 *       "teller": {
 *         "flows": ["pay", "request", "check", "data", "pin"],
 *         "perPaymentLimit": { "UGX": "500000", "KES": "20000" },
 *         "dailyLimit": { "UGX": "2000000", "KES": "100000" },
 *         "approvalAbove": { "UGX": "1000000" }
 *       },
 *       "finance": { "flows": ["check"], "perPaymentLimit": {}, "dailyLimit": {}, "approve": true }
 *     },
 *     "users": {
 *       "telegram": { "123456789": { "role": "teller" } },
 *       "slack": { "U0123ABCD": { "role": "teller" } },
 *       "ussd": { "+256772123456": { "role": "teller", "pin": "scrypt$<salt>$<hash>" } },
 *       "whatsapp": { "256772123456": { "role": "teller" } }
 *     }
 *   }
 *
 * An entry may name its `person` ("users": { "ussd": { "+256772123456": { "role": "teller", "person": "amina" } },
 * "slack": { "U0123ABCD": { "role": "teller", "person": "amina" } } }): the entries of one person share one role,
 * one PIN, one daily total and one maker (none of their identities decides a payment of another); an entry
 * without one is a person of its own, named `<channel>:<user id>`, as every user was before persons existed.
 * The database's directory of people (src/people) replaces the policy's once imported.
 *
 * Users are keyed per channel by Telegram user id, Slack user id, USSD phone number (`+` format) or WhatsApp
 * `wa_id` (the number in digits as Meta sends it; an entry written `+256...` matches it too); `*`
 * matches every other user of that channel. Limits are decimal strings per currency, `*` for any currency
 * not listed; a currency with neither is refused. Daily totals count per person, currency and UTC day.
 * `approvalAbove` holds a larger payment for a user whose role has `approve: true` (src/approvals: the
 * maker's limits and daily total are counted when it is approved); `approve` defaults to false.
 * A PIN is stored as `scrypt$salt$hash` (base64url), made with {@link hashPin}; three wrong tries lock it
 * for {@link PIN_LOCK_SECONDS}.
 *
 * Daily totals, wrong tries and locks are kept where {@link AccessPolicy.useLimits} says: the database's
 * (src/people/limits.ts) once a start opened one, which every product start does; the store's counters
 * only in a setup without any database (./limits.ts).
 *
 * With no policy set, {@link demoPolicy} applies: every user of every channel gets role `demo` (all
 * flows, modest limits) and USSD users have PIN 1234. That is for the sandbox only. To lock it down, an
 * operator sets ACCESS_POLICY_FILE to a policy without `*` entries, listing each user, and gives each USSD
 * user their own PIN hash, made with:
 *
 *   npx tsx -e "import('./src/conversation/calls/access-policy.ts').then((m) => console.log(m.hashPin('4821')))"
 */
import { readFileSync } from 'node:fs';
import { Decimal } from 'decimal.js';
import { z } from 'zod';
import type { CheckSpend, ReserveSpend } from '../../../flows/calls.js';
import type { FlowId, ServiceFailure } from '../../../flows/types.js';
import { CHANNELS, Directory, identityId, type Identity, type Person, type Wildcard } from '../../people/directory.js';
import { hashSecret, SECRET_HASH, secretMatches } from '../../people/secrets.js';
import type { Channel } from '../types.js';
import type { Store } from '../../store/types.js';
import { storeLimits, type GiveBackReason, type Limits, type Reservation } from './limits.js';

/** Wrong PIN tries before the PIN locks. */
export const PIN_MAX_ATTEMPTS = 3;
/** How long a locked PIN stays locked, counted from the last wrong try: 15 minutes. */
export const PIN_LOCK_SECONDS = 15 * 60;

const POLICY_FLOWS = ['pay', 'request', 'check', 'data', 'pin'] as const;
/** Flows that move money or ask for it (everything but check): what a `*` entry may not do in production. */
export const MONEY_FLOWS: readonly FlowId[] = ['pay', 'request', 'data', 'pin'];
const decimalString = z.string().regex(/^\d+(\.\d+)?$/, 'a decimal string such as "50000" or "99.50"');
const limits = z.record(z.string(), decimalString);
/** A person's name in the policy: what groups their entries (no `:`, which ids made from an entry carry). */
const PERSON_NAME = /^[A-Za-z0-9_.@-]{1,64}$/;
const user = z
  .object({
    role: z.string(),
    pin: z.string().regex(SECRET_HASH, 'scrypt$salt$hash').optional(),
    /** Groups the entries of one person (their limits, daily totals, PIN and approvals are theirs, not the entry's). */
    person: z.string().regex(PERSON_NAME, 'letters, digits, _ . @ - (at most 64)').optional(),
  })
  .strict();
const users = z.record(z.string(), user).default({});

const policySchema = z
  .object({
    roles: z.record(
      z.string(),
      z.object({
        flows: z.array(z.enum(POLICY_FLOWS)),
        perPaymentLimit: limits,
        dailyLimit: limits,
        /** The check flow lists every collection of the organization. Default false: those of the user's own requests. */
        seeAllCollections: z.boolean().default(false),
        /**
         * Maker/checker: a payment above this amount (per currency, `*` for any other) is held for an approver
         * instead of being sent (src/approvals). Default none: nothing this role pays is held.
         */
        approvalAbove: limits.default({}),
        /** May approve or reject payments held for approval (never their own). Default false. */
        approve: z.boolean().default(false),
      }),
    ),
    users: z.object({ telegram: users, slack: users, ussd: users, whatsapp: users }).strict(),
  })
  .superRefine((policy, ctx) => {
    for (const [channel, entries] of Object.entries(policy.users)) {
      for (const [id, entry] of Object.entries(entries)) {
        if (!(entry.role in policy.roles))
          ctx.addIssue({ code: 'custom', path: ['users', channel, id, 'role'], message: `unknown role ${entry.role}` });
        if (id === '*' && entry.person !== undefined) {
          ctx.addIssue({
            code: 'custom',
            path: ['users', channel, id, 'person'],
            message: 'a * entry is everyone else, not one person',
          });
        }
      }
    }
    // One person, one role and one PIN, whichever of their entries says it.
    const seen = new Map<string, { role: string; pin?: string; where: string }>();
    for (const [channel, entries] of Object.entries(policy.users)) {
      for (const [id, entry] of Object.entries(entries)) {
        if (entry.person === undefined) continue;
        const first = seen.get(entry.person);
        if (!first) {
          seen.set(entry.person, {
            role: entry.role,
            ...(entry.pin ? { pin: entry.pin } : {}),
            where: `users.${channel}.${id}`,
          });
          continue;
        }
        if (first.role !== entry.role) {
          ctx.addIssue({
            code: 'custom',
            path: ['users', channel, id, 'role'],
            message: `person ${entry.person} has role ${first.role} at ${first.where}: a person has one role`,
          });
        }
        if (entry.pin && first.pin && first.pin !== entry.pin) {
          ctx.addIssue({
            code: 'custom',
            path: ['users', channel, id, 'pin'],
            message: `person ${entry.person} has another PIN at ${first.where}: a person has one PIN`,
          });
        }
        if (entry.pin && !first.pin) first.pin = entry.pin;
      }
    }
  });

export type PolicyDocument = z.input<typeof policySchema>;
export type Role = z.output<typeof policySchema>['roles'][string];
/** A policy document as validated (defaults filled in). */
export type PolicyOutput = z.output<typeof policySchema>;

/** `scrypt$salt$hash` of a PIN of 4 to 8 digits, with a fresh random salt. */
export function hashPin(pin: string): string {
  if (!/^\d{4,8}$/.test(pin)) throw new Error('a PIN is 4 to 8 digits');
  return hashSecret(pin);
}

/** The persons, identities and `*` rules a policy document names (see the file comment for the grouping). */
export function peopleOfPolicy(doc: PolicyOutput): {
  persons: Person[];
  identities: Identity[];
  wildcards: Partial<Record<Channel, Wildcard>>;
} {
  const persons = new Map<string, Person>();
  const identities = new Map<string, Identity>();
  const wildcards: Partial<Record<Channel, Wildcard>> = {};
  for (const channel of CHANNELS) {
    const entries = Object.entries(doc.users[channel] ?? {});
    // An entry written as the id itself wins over one written with a `+` that means the same wa_id.
    entries.sort(([a], [b]) => Number(a.startsWith('+')) - Number(b.startsWith('+')));
    for (const [rawId, entry] of entries) {
      if (rawId === '*') {
        wildcards[channel] = { role: entry.role, ...(entry.pin ? { pin: entry.pin } : {}) };
        continue;
      }
      const userId = identityId(channel, rawId);
      const key = `${channel}:${userId}`;
      if (identities.has(key)) continue;
      const id = entry.person ?? key;
      const known = persons.get(id);
      if (known) {
        if (!known.pin && entry.pin) persons.set(id, { ...known, pin: entry.pin });
      } else {
        persons.set(id, {
          id,
          name: entry.person ?? userId,
          role: entry.role,
          status: 'active',
          ...(entry.pin ? { pin: entry.pin } : {}),
        });
      }
      identities.set(key, { channel, userId, person: id });
    }
  }
  return { persons: [...persons.values()], identities: [...identities.values()], wildcards };
}

/** The sandbox policy used when none is configured (see the file comment). */
export function demoPolicy(): PolicyDocument {
  const demo = { role: 'demo' };
  return {
    roles: {
      demo: {
        flows: [...POLICY_FLOWS],
        // NGN: data bundles and exam pins, priced in naira (flows/purchase.ts VENDING_CURRENCY).
        perPaymentLimit: { UGX: '500000', KES: '20000', NGN: '50000', '*': '1000' },
        dailyLimit: { UGX: '2000000', KES: '100000', NGN: '200000', '*': '5000' },
      },
    },
    users: {
      telegram: { '*': demo },
      slack: { '*': demo },
      ussd: { '*': { ...demo, pin: hashPin('1234') } },
      whatsapp: { '*': demo },
    },
  };
}

const refuse = (code: ServiceFailure['code'], message: string): ServiceFailure => ({ code, message });

/** Over the per-payment limit: the figure is the limit. */
const overPayment = (perPayment: string, currency: string): ServiceFailure => ({
  code: 'limit_exceeded',
  message: `more than ${perPayment} ${currency} per payment`,
  limit: { per: 'payment', max: perPayment, currency },
});

/** Over what is left of the day: the figures are what is left and what was sent (`spent` in minor units). */
function overDay(daily: string, spent: number, currency: string): ServiceFailure {
  const sent = new Decimal(spent).div(100);
  const left = Decimal.max(0, new Decimal(daily).minus(sent));
  return {
    code: 'limit_exceeded',
    message: `more than ${daily} ${currency} today`,
    limit: { per: 'day', max: left.toFixed(), spent: sent.toFixed(), currency },
  };
}

/** Minor units (hundredths) of a decimal amount, rounded up so a limit is never passed by rounding. */
const minorUnits = (amount: Decimal): number => amount.mul(100).ceil().toNumber();

export interface AccessPolicyOptions {
  /** Clock in milliseconds (the UTC day of daily totals). Default Date.now. */
  now?: () => number;
}

export class AccessPolicy {
  private readonly doc: PolicyOutput;
  private readonly now: () => number;
  private current: Directory;
  private limits: Limits | undefined;

  /** Validates the document; throws naming every bad entry. */
  constructor(document: unknown, options: AccessPolicyOptions = {}) {
    const parsed = policySchema.safeParse(document);
    if (!parsed.success) {
      throw new Error(
        `Invalid access policy:\n  ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('\n  ')}`,
      );
    }
    this.doc = parsed.data;
    this.now = options.now ?? Date.now;
    const { persons, identities, wildcards } = peopleOfPolicy(this.doc);
    this.current = new Directory(0, persons, identities, wildcards);
  }

  /** The validated document (the people import reads it: src/people/import.ts). */
  get document(): PolicyOutput {
    return this.doc;
  }

  /** The directory of people in use: the policy's own until the database's replaces it (src/people/sync.ts). */
  get directory(): Directory {
    return this.current;
  }

  /** Replaces the directory in one step (every later check reads the new one). */
  useDirectory(directory: Directory): void {
    this.current = directory;
  }

  /**
   * Keeps daily totals, wrong tries and locks in `limits` from now on: the database's (src/people/start.ts sets
   * it when the directory's database opens). Until then, and in a setup without any database, the
   * store's counters are used.
   */
  useLimits(limits: Limits): void {
    this.limits = limits;
  }

  /** Where daily totals, tries and locks are kept and decided: the database's once set, else `store`'s counters. */
  limitsIn(store: Store): Limits {
    return this.limits ?? storeLimits(store);
  }

  /** The roles the policy defines, by name. */
  roles(): Readonly<Record<string, Role>> {
    return this.doc.roles;
  }

  /** The person behind a channel's user (suspended ones too), or undefined for someone nobody listed. */
  person(channel: Channel, userId: string): Person | undefined {
    return this.current.find(channel, userId);
  }

  /** The id of the person behind a channel's user (suspended ones too); undefined for the unknown. */
  personOf(channel: Channel, userId: string): string | undefined {
    return this.current.find(channel, userId)?.id;
  }

  /** The user's role, or undefined for someone the policy does not know or whose person is suspended. */
  role(channel: Channel, userId: string): Role | undefined {
    const person = this.current.find(channel, userId);
    return person && person.status === 'active' ? this.doc.roles[person.role] : undefined;
  }

  /** The name of the user's role (as the policy names it), or undefined for someone the policy does not know. */
  roleName(channel: Channel, userId: string): string | undefined {
    return this.current.find(channel, userId)?.role;
  }

  /** True when a payment of `amount` `currency` by this user is held for an approver (the role's `approvalAbove`). */
  needsApproval(channel: Channel, userId: string, amount: string, currency: string): boolean {
    const above = this.role(channel, userId)?.approvalAbove;
    const threshold = above?.[currency.toUpperCase()] ?? above?.['*'];
    return threshold !== undefined && new Decimal(amount).gt(threshold);
  }

  /** The user's per-payment and daily limits in `currency` (its own entry, else `*`); undefined when the role sets none. */
  limitsOf(channel: Channel, userId: string, currency: string): { perPayment?: string; daily?: string } {
    const role = this.role(channel, userId);
    const code = currency.toUpperCase();
    return {
      perPayment: role?.perPaymentLimit[code] ?? role?.perPaymentLimit['*'],
      daily: role?.dailyLimit[code] ?? role?.dailyLimit['*'],
    };
  }

  /**
   * The currencies of `offered` the user's role may pay in (a per-payment and a daily limit for it, or `*`), in
   * the order offered; all of `offered` when the role allows none of them (the amount's check then says why).
   * The pay flow asks for a currency only when this holds more than one.
   */
  currenciesOf(channel: Channel, userId: string, offered: readonly string[]): string[] {
    const usable = offered.filter((currency) => {
      const { perPayment, daily } = this.limitsOf(channel, userId, currency);
      return perPayment !== undefined && daily !== undefined;
    });
    return usable.length > 0 ? usable : [...offered];
  }

  /** True when the user's role may decide held payments (`approve: true`). */
  mayApprove(channel: Channel, userId: string): boolean {
    return this.role(channel, userId)?.approve === true;
  }

  /** True when some role holds payments for approval: an approvals channel is then needed. */
  holdsPayments(): boolean {
    return Object.values(this.doc.roles).some((role) => Object.keys(role.approvalAbove).length > 0);
  }

  /**
   * Rejects with ServiceFailure `not_allowed` unless the user's role may use `flow`; a money flow also needs a
   * PIN that is not waiting to be set after a reset.
   */
  checkFlow(channel: Channel, userId: string, flow: string): void {
    const role = this.role(channel, userId);
    if (!role || !role.flows.some((f) => f === flow)) throw refuse('not_allowed', `flow ${flow} not allowed`);
    if (this.current.find(channel, userId)?.pinMustChange && MONEY_FLOWS.some((f) => f === flow)) {
      throw refuse('not_allowed', 'the PIN was reset: set a new one first');
    }
  }

  /** Every user entry with its role's flows, as the start checks read them (src/start-checks.ts). */
  *entries(): Generator<{ channel: Channel; id: string; role: string; flows: readonly FlowId[]; hasPin: boolean }> {
    for (const [channel, users] of Object.entries(this.doc.users) as Array<
      [Channel, Record<string, { role: string; pin?: string; person?: string }>]
    >) {
      for (const [id, entry] of Object.entries(users)) {
        // A grouped entry without a PIN of its own has its person's.
        const hasPin =
          entry.pin !== undefined ||
          (entry.person !== undefined && this.current.person(entry.person)?.pin !== undefined);
        yield { channel, id, role: entry.role, flows: this.doc.roles[entry.role]?.flows ?? [], hasPin };
      }
    }
  }

  /** The flows the user may start (empty for an unknown or suspended user). */
  allowedFlows(channel: Channel, userId: string): FlowId[] {
    return [...(this.role(channel, userId)?.flows ?? [])];
  }

  /**
   * Checks a PIN: the person's, whichever of their identities asks. Rejects with ServiceFailure `pin_wrong`
   * (message: attempts left), `pin_locked`, or `not_allowed` when the person has no PIN, is suspended, or
   * must set a new one first.
   */
  async verifyPin(store: Store, input: { channel: Channel; userId: string; pin: string }): Promise<void> {
    const person = this.current.find(input.channel, input.userId);
    if (!person || person.status !== 'active') throw refuse('not_allowed', 'not allowed');
    if (person.pinMustChange) throw refuse('not_allowed', 'the PIN was reset: set a new one first');
    const stored = person.pin;
    if (!stored) throw refuse('not_allowed', 'no PIN is set for this user');
    if (person.pinLockedUntil !== undefined && person.pinLockedUntil > this.now())
      throw refuse('pin_locked', 'PIN locked');
    const limits = this.limitsIn(store);
    // The try is counted before the PIN is checked, in one atomic step: however many tries arrive at once
    // (several gateways, several processes), no more than PIN_MAX_ATTEMPTS PINs are ever compared.
    const counted = await limits.countTry('pin', person.id, PIN_MAX_ATTEMPTS, PIN_LOCK_SECONDS);
    if (!counted.ok) throw refuse('pin_locked', 'PIN locked');
    if (await secretMatches(input.pin, stored)) {
      await limits.clearTries('pin', person.id);
      return;
    }
    const left = PIN_MAX_ATTEMPTS - counted.total;
    if (left <= 0) {
      await this.lockPin(limits, person.id, 'wrong PIN');
      throw refuse('pin_locked', 'PIN locked');
    }
    throw refuse('pin_wrong', `${left} attempts left`);
  }

  /**
   * The wrong tries of a PIN or a one-time code reached {@link PIN_MAX_ATTEMPTS}: the lock is written with why
   * (the tries counted lock it already, should this write fail).
   */
  async lockPin(limits: Limits, personId: string, why: 'wrong PIN' | 'wrong one-time code'): Promise<void> {
    await limits.lockPin(personId, this.now() + PIN_LOCK_SECONDS * 1000, why);
  }

  /**
   * Checks the role allows the flow and the amount, and reserves the amount in the person's total of today
   * (UTC), one total whichever of their channels pays, under the payment's Duplicate-Check-Key: once, whatever
   * repeats the step (a resend, a restored snapshot, a run taken over). Rejects with ServiceFailure
   * `not_allowed` or `limit_exceeded`. The reservation is given back with {@link giveBackSpend} when the service
   * refuses the payment or it ends without money moving.
   */
  async reserveSpend(store: Store, input: ReserveSpend<Channel>): Promise<void> {
    const reservation = this.reservationOf(input);
    const { ok, total } = await this.limitsIn(store).reserve(reservation);
    if (!ok) throw this.overDayOf(reservation, total);
  }

  /**
   * The checks of {@link reserveSpend}, reserving nothing: the role may use the flow and the amount (or the
   * largest of a payout's) is within the per-payment limit. For the services whose reservation is written with
   * the payment's intent (recordMade with the journal's reservation): the reservation step of a flow checks
   * this, and the day's total is checked under its lock when the intent is written.
   */
  checkReservation(input: ReserveSpend<Channel>): void {
    this.reservationOf(input);
  }

  /**
   * The reservation {@link reserveSpend} makes for `input` (checked as {@link checkReservation} says): the
   * person, today (UTC), the amount in minor units and the daily limit. Throws ServiceFailure `not_allowed` or
   * `limit_exceeded`.
   */
  reservationOf(input: ReserveSpend<Channel>): Reservation {
    this.checkFlow(input.channel, input.userId, input.flow);
    const person = this.current.find(input.channel, input.userId)!;
    const currency = input.currency.toUpperCase();
    const { perPayment, daily } = this.limitsOf(input.channel, input.userId, currency);
    if (perPayment === undefined || daily === undefined) throw refuse('limit_exceeded', `no limit set for ${currency}`);
    const amount = new Decimal(input.amount);
    // A bulk payout's total counts in the day; the per-payment limit applies to each of its recipients.
    if (new Decimal(input.largest ?? input.amount).gt(perPayment)) throw overPayment(perPayment, currency);
    return {
      ref: input.duplicateCheckKey,
      person: person.id,
      currency,
      day: this.today(),
      amount: amount.toFixed(),
      minor: minorUnits(amount),
      limit: new Decimal(daily).mul(100).floor().toNumber(),
    };
  }

  /** The refusal of a reservation the daily limit refused, `total` (minor units) spent before it. */
  overDayOf(reservation: Reservation, total: number): ServiceFailure {
    return overDay(new Decimal(reservation.limit).div(100).toFixed(), total, reservation.currency);
  }

  /**
   * The checks of {@link reserveSpend} made when the amount is entered, before anything else is asked: the role
   * may use the flow, the amount is within the per-payment limit and within what is left of today's. Reserves
   * nothing (the reservation after the confirmation checks again, atomically). Rejects with ServiceFailure
   * `not_allowed`, or `limit_exceeded` carrying the figures ({@link SpendLimit}): "at most 500,000 UGX today
   * (1,500,000 already sent)". Per-person limits (people, src/people) come in behind this same call.
   */
  async checkSpend(store: Store, input: CheckSpend<Channel>): Promise<void> {
    this.checkFlow(input.channel, input.userId, input.flow);
    const person = this.current.find(input.channel, input.userId)!;
    const limits = this.limitsIn(store);
    if (input.pin && (await this.pinLocked(limits, person))) throw refuse('pin_locked', 'PIN locked');
    const currency = input.currency.toUpperCase();
    const { perPayment, daily } = this.limitsOf(input.channel, input.userId, currency);
    if (perPayment === undefined || daily === undefined) throw refuse('limit_exceeded', `no limit set for ${currency}`);
    const amount = new Decimal(input.amount);
    if (amount.gt(perPayment)) throw overPayment(perPayment, currency);
    const spent = await limits.spent(person.id, currency, this.today());
    if (spent + minorUnits(amount) > new Decimal(daily).mul(100).floor().toNumber())
      throw overDay(daily, spent, currency);
  }

  /**
   * The person's PIN is locked: by the operator's page until a time, or by {@link PIN_MAX_ATTEMPTS} wrong tries
   * within {@link PIN_LOCK_SECONDS} (read without counting one).
   */
  private async pinLocked(limits: Limits, person: { id: string; pinLockedUntil?: number }): Promise<boolean> {
    if (person.pinLockedUntil !== undefined && person.pinLockedUntil > this.now()) return true;
    return (await limits.tries('pin', person.id)) >= PIN_MAX_ATTEMPTS;
  }

  /**
   * Gives back the spend reserved under a payment's Duplicate-Check-Key (its `metadata.ref`), saying why: the
   * service refused it, it ended `processed_with_errors`, `rejected` or `cancelled`, its intent could not be
   * written, or its run was lost before the call. Once only; unknown keys change nothing.
   */
  giveBackSpend(
    store: Store,
    duplicateCheckKey: string,
    reason: GiveBackReason = 'ended without money moving',
  ): Promise<boolean> {
    return this.limitsIn(store).giveBack(duplicateCheckKey, reason);
  }

  /** Today (UTC), `YYYY-MM-DD`: the day of daily totals. */
  private today(): string {
    return new Date(this.now()).toISOString().slice(0, 10);
  }
}

export interface LoadPolicyOptions extends AccessPolicyOptions {
  /** ACCESS_POLICY: JSON text, or a path to a JSON file. */
  policy?: string;
  /** ACCESS_POLICY_FILE: a path to a JSON file. */
  file?: string;
}

/** The configured policy, or the demo policy when neither setting is given. */
export function loadAccessPolicy(options: LoadPolicyOptions = {}): AccessPolicy {
  const source = options.policy ?? options.file;
  if (!source) return new AccessPolicy(demoPolicy(), options);
  const text = source.trimStart().startsWith('{') ? source : readFileSync(source, 'utf8');
  return new AccessPolicy(JSON.parse(text), options);
}
