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
 * Users are keyed per channel by Telegram user id, Slack user id, USSD phone number (`+` format) or WhatsApp
 * `wa_id` (the number in digits as Meta sends it; an entry written `+256...` matches it too); `*`
 * matches every other user of that channel. Limits are decimal strings per currency, `*` for any currency
 * not listed; a currency with neither is refused. Daily totals count per user, currency and UTC day.
 * `approvalAbove` holds a larger payment for a user whose role has `approve: true` (src/approvals: the
 * maker's limits and daily total are counted when it is approved); `approve` defaults to false.
 * A PIN is stored as `scrypt$salt$hash` (base64url), made with {@link hashPin}; three wrong tries lock it
 * for {@link PIN_LOCK_SECONDS}.
 *
 * With no policy set, {@link demoPolicy} applies: every user of every channel gets role `demo` (all
 * flows, modest limits) and USSD users have PIN 1234. That is for the sandbox only. To lock it down, an
 * operator sets ACCESS_POLICY_FILE to a policy without `*` entries, listing each user, and gives each USSD
 * user their own PIN hash, made with:
 *
 *   npx tsx -e "import('./src/conversation/services/access-policy.ts').then((m) => console.log(m.hashPin('4821')))"
 */
import { randomBytes, scrypt, scryptSync, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { Decimal } from 'decimal.js';
import { z } from 'zod';
import type { FlowId, ServiceFailure } from '../../../flows/types.js';
import { keys } from '../store/keys.js';
import type { Channel, SessionStore } from '../types.js';

const scryptAsync = promisify(scrypt) as (pin: string, salt: Buffer, length: number) => Promise<Buffer>;

/** Wrong PIN tries before the PIN locks. */
export const PIN_MAX_ATTEMPTS = 3;
/** How long a locked PIN stays locked, counted from the last wrong try: 15 minutes. */
export const PIN_LOCK_SECONDS = 15 * 60;
/** Daily totals outlive their UTC day by a day, so a late payment near midnight still counts. */
const DAILY_TOTAL_TTL_SECONDS = 2 * 24 * 3600;
const HASH_BYTES = 32;

const POLICY_FLOWS = ['pay', 'request', 'check', 'data', 'pin'] as const;
/** Flows that move money or ask for it (everything but check): what a `*` entry may not do in production. */
export const MONEY_FLOWS: readonly FlowId[] = ['pay', 'request', 'data', 'pin'];
const decimalString = z.string().regex(/^\d+(\.\d+)?$/, 'a decimal string such as "50000" or "99.50"');
const limits = z.record(z.string(), decimalString);
const user = z.object({ role: z.string(), pin: z.string().regex(/^scrypt\$[\w-]+\$[\w-]+$/, 'scrypt$salt$hash').optional() }).strict();
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
        if (!(entry.role in policy.roles)) ctx.addIssue({ code: 'custom', path: ['users', channel, id, 'role'], message: `unknown role ${entry.role}` });
      }
    }
  });

export type PolicyDocument = z.input<typeof policySchema>;
export type Role = z.output<typeof policySchema>['roles'][string];

/** `scrypt$salt$hash` of a PIN of 4 to 8 digits, with a fresh random salt. */
export function hashPin(pin: string): string {
  if (!/^\d{4,8}$/.test(pin)) throw new Error('a PIN is 4 to 8 digits');
  const salt = randomBytes(16);
  return `scrypt$${salt.toString('base64url')}$${scryptSync(pin, salt, HASH_BYTES).toString('base64url')}`;
}

async function pinMatches(pin: string, stored: string): Promise<boolean> {
  const [, salt, hash] = stored.split('$');
  const expected = Buffer.from(hash ?? '', 'base64url');
  const actual = await scryptAsync(pin, Buffer.from(salt ?? '', 'base64url'), expected.length || HASH_BYTES);
  return expected.length === actual.length && timingSafeEqual(expected, actual);
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
    users: { telegram: { '*': demo }, slack: { '*': demo }, ussd: { '*': { ...demo, pin: hashPin('1234') } }, whatsapp: { '*': demo } },
  };
}

const refuse = (code: ServiceFailure['code'], message: string): ServiceFailure => ({ code, message });

/** Minor units (hundredths) of a decimal amount, rounded up so a limit is never passed by rounding. */
const minorUnits = (amount: Decimal): number => amount.mul(100).ceil().toNumber();

export interface AccessPolicyOptions {
  /** Clock in milliseconds (the UTC day of daily totals). Default Date.now. */
  now?: () => number;
}

export class AccessPolicy {
  private readonly doc: z.output<typeof policySchema>;
  private readonly now: () => number;

  /** Validates the document; throws naming every bad entry. */
  constructor(document: unknown, options: AccessPolicyOptions = {}) {
    const parsed = policySchema.safeParse(document);
    if (!parsed.success) {
      throw new Error(`Invalid access policy:\n  ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('\n  ')}`);
    }
    this.doc = parsed.data;
    this.now = options.now ?? Date.now;
  }

  private user(channel: Channel, userId: string): { role: string; pin?: string } | undefined {
    const users = this.doc.users[channel];
    // A wa_id is digits; operators often write the number with its `+`.
    return users[userId] ?? (channel === 'whatsapp' ? users[`+${userId}`] : undefined) ?? users['*'];
  }

  /** The user's role, or undefined for someone the policy does not know. */
  role(channel: Channel, userId: string): Role | undefined {
    const user = this.user(channel, userId);
    return user ? this.doc.roles[user.role] : undefined;
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
    return { perPayment: role?.perPaymentLimit[code] ?? role?.perPaymentLimit['*'], daily: role?.dailyLimit[code] ?? role?.dailyLimit['*'] };
  }

  /** True when the user's role may decide held payments (`approve: true`). */
  mayApprove(channel: Channel, userId: string): boolean {
    return this.role(channel, userId)?.approve === true;
  }

  /** True when some role holds payments for approval: an approvals channel is then needed. */
  holdsPayments(): boolean {
    return Object.values(this.doc.roles).some((role) => Object.keys(role.approvalAbove).length > 0);
  }

  /** Rejects with ServiceFailure `not_allowed` unless the user's role may use `flow`. */
  checkFlow(channel: Channel, userId: string, flow: string): void {
    const role = this.role(channel, userId);
    if (!role || !role.flows.some((f) => f === flow)) throw refuse('not_allowed', `flow ${flow} not allowed`);
  }

  /** Every user entry with its role's flows, as the start checks read them (src/start-checks.ts). */
  *entries(): Generator<{ channel: Channel; id: string; role: string; flows: readonly FlowId[]; hasPin: boolean }> {
    for (const [channel, users] of Object.entries(this.doc.users) as Array<[Channel, Record<string, { role: string; pin?: string }>]>) {
      for (const [id, entry] of Object.entries(users)) {
        yield { channel, id, role: entry.role, flows: this.doc.roles[entry.role]?.flows ?? [], hasPin: entry.pin !== undefined };
      }
    }
  }

  /** The flows the user may start (empty for an unknown user). */
  allowedFlows(channel: Channel, userId: string): FlowId[] {
    return [...(this.role(channel, userId)?.flows ?? [])];
  }

  /**
   * Checks a PIN. Rejects with ServiceFailure `pin_wrong` (message: attempts left), `pin_locked`, or
   * `not_allowed` when the user has no PIN.
   */
  async verifyPin(store: SessionStore, input: { channel: Channel; userId: string; pin: string }): Promise<void> {
    const stored = this.user(input.channel, input.userId)?.pin;
    if (!stored) throw refuse('not_allowed', 'no PIN is set for this user');
    const failures = keys.pinFailures(input.channel, input.userId);
    // The try is counted before the PIN is checked, in one atomic step: however many tries arrive at once
    // (several gateways, several processes), no more than PIN_MAX_ATTEMPTS PINs are ever compared.
    const counted = await store.addWithinLimit(failures, 1, PIN_MAX_ATTEMPTS, PIN_LOCK_SECONDS);
    if (!counted.ok) throw refuse('pin_locked', 'PIN locked');
    if (await pinMatches(input.pin, stored)) {
      await store.delete(failures);
      return;
    }
    const left = PIN_MAX_ATTEMPTS - counted.total;
    if (left <= 0) throw refuse('pin_locked', 'PIN locked');
    throw refuse('pin_wrong', `${left} attempts left`);
  }

  /**
   * Checks the role allows the flow and the amount, and reserves the amount in today's total (UTC) under the
   * payment's Duplicate-Check-Key: once, whatever repeats the step (a resend, a restored snapshot, a run taken
   * over). Rejects with ServiceFailure `not_allowed` or `limit_exceeded`. The reservation is given back with
   * {@link giveBackSpend} when the service refuses the payment or it ends without money moving.
   */
  async reserveSpend(
    store: SessionStore,
    input: { channel: Channel; userId: string; flow: string; amount: string; currency: string; duplicateCheckKey: string; largest?: string },
  ): Promise<void> {
    this.checkFlow(input.channel, input.userId, input.flow);
    const currency = input.currency.toUpperCase();
    const { perPayment, daily } = this.limitsOf(input.channel, input.userId, currency);
    if (perPayment === undefined || daily === undefined) throw refuse('limit_exceeded', `no limit set for ${currency}`);
    const amount = new Decimal(input.amount);
    // A bulk payout's total counts in the day; the per-payment limit applies to each of its recipients.
    if (new Decimal(input.largest ?? input.amount).gt(perPayment)) throw refuse('limit_exceeded', `more than ${perPayment} ${currency} per payment`);
    const day = new Date(this.now()).toISOString().slice(0, 10);
    const total = keys.dailySpend(input.channel, input.userId, currency, day);
    const limit = new Decimal(daily).mul(100).floor().toNumber();
    const { ok } = await store.reserve(keys.spendReservation(input.duplicateCheckKey), total, minorUnits(amount), limit, DAILY_TOTAL_TTL_SECONDS);
    if (!ok) throw refuse('limit_exceeded', `more than ${daily} ${currency} today`);
  }
}

/**
 * Gives back the spend reserved under a payment's Duplicate-Check-Key (its `metadata.ref`): the service refused
 * it, or it ended `processed_with_errors`, `rejected` or `cancelled`. Once only; unknown keys change nothing.
 */
export function giveBackSpend(store: SessionStore, duplicateCheckKey: string): Promise<boolean> {
  return store.giveBack(keys.spendReservation(duplicateCheckKey));
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
