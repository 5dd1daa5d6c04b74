/**
 * Environment -> typed Config. Every setting has an embedded default, so `npm start` with no environment
 * runs the embedded sandbox, the memory store, the USSD endpoint and the USSD simulator.
 */
import ipaddr from 'ipaddr.js';
import { z } from 'zod';
import { isTimeZone } from './local-time.js';
import type { HostPort, RedisSettings } from './redis/connect.js';
import { DEFAULT_KEY_PREFIX, keyPrefixProblem } from './store/keys.js';

const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

const list = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((v) =>
      v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    );

/**
 * `key:CODE,…` pairs (`telegram:UG`, `UG:UGX`): a key `isKey` accepts (after `normalize`), a colon, a code of
 * `letters` letters (kept in capitals); read into key -> codes in the order given.
 */
const pairs = (isKey: RegExp, normalize: (key: string) => string, what: string, letters: number, fallback = '') =>
  list(fallback).transform((entries, ctx): Record<string, string[]> => {
    const read: Record<string, string[]> = {};
    for (const entry of entries) {
      const match = new RegExp(`^([^:\\s]+)\\s*:\\s*([A-Za-z]{${letters}})$`).exec(entry);
      const key = match ? normalize(match[1]!) : '';
      if (!match || !isKey.test(key)) {
        ctx.addIssue({ code: 'custom', message: `${entry}: not ${what}` });
        return z.NEVER;
      }
      (read[key] ??= []).push(match[2]!.toUpperCase());
    }
    return read;
  });

/** The /ops changes OPS_DUAL_CONTROL may put under a second operator's approval. */
export const DUAL_CONTROL_ACTIONS = [
  'add-person',
  'role',
  'reactivate',
  'reset-pin',
  'link-code',
  'add-operator',
  'suspend-operator',
  'reactivate-operator',
  'remove-operator',
  'correct',
] as const;
export type DualControlAction = (typeof DUAL_CONTROL_ACTIONS)[number];

/** `true`/`false` (only these: a typo must not read as either). */
const flag = z
  .enum(['true', 'false'])
  .default('false')
  .transform((v) => v === 'true');

/** A secret the caller must present: URL-safe characters (it may sit in a path), long enough not to be guessed. */
const secret = optionalString.refine((v) => v === undefined || /^[A-Za-z0-9._~-]{16,256}$/.test(v), {
  message: 'at least 16 characters, letters, digits and . _ ~ - only (e.g. `openssl rand -hex 24`)',
});

/** An IPv4 or IPv6 address, or a CIDR range of either, in its usual written form. */
function isAddressOrRange(entry: string): boolean {
  return (
    ipaddr.IPv4.isValidFourPartDecimal(entry) ||
    ipaddr.IPv6.isValid(entry) ||
    ipaddr.IPv4.isValidCIDRFourPartDecimal(entry) ||
    ipaddr.IPv6.isValidCIDR(entry)
  );
}

/** An endpoint events may be sent to: https, or http to this machine only. */
function isEndpoint(value: string): boolean {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  if (url.username || url.password) return false;
  if (url.protocol === 'https:') return true;
  return url.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
}

/** The names of address ranges express's `trust proxy` knows (proxy-addr). */
const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/**
 * TRUST_PROXY -> express's `trust proxy`: unset is `false` (the socket address is the caller), a whole number
 * is that many proxy hops in front of the product, a list names the proxies' addresses or ranges. `true`
 * (believe every X-Forwarded-For) is refused: any caller could then claim any address.
 */
const trustProxy = optionalString.transform((v, ctx): number | string[] | false => {
  if (v === undefined || v === 'false') return false;
  if (/^\d+$/.test(v) && Number(v) <= 10) return Number(v);
  const entries = v
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  const bad = entries.filter((e) => !isAddressOrRange(e) && !PROXY_RANGE_NAMES.includes(e));
  if (entries.length === 0 || bad.length > 0) {
    ctx.addIssue({
      code: 'custom',
      message: `name the proxy hops in front of the product: a number (0-10) or their addresses/ranges (${PROXY_RANGE_NAMES.join(', ')} allowed), never true; not understood: ${(bad.length > 0 ? bad : [v]).join(', ')}`,
    });
    return z.NEVER;
  }
  return entries;
});

/** `host:port,…` (a hostname, IPv4 or [IPv6] host; a port 1-65535); unset or empty: undefined. */
const hostPorts = optionalString.transform((v, ctx): HostPort[] | undefined => {
  if (v === undefined) return undefined;
  const entries = v
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  const parsed = entries.map((entry) => {
    const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})$/.exec(entry);
    const port = Number(match?.[2]);
    return match && port >= 1 && port <= 65535 ? { host: match[1]!.replace(/^\[|\]$/g, ''), port } : entry;
  });
  const bad = parsed.filter((p) => typeof p === 'string');
  if (entries.length === 0 || bad.length > 0) {
    ctx.addIssue({
      code: 'custom',
      message: `a list of host:port (e.g. 10.0.0.1:26379,10.0.0.2:26379); not understood: ${(bad.length > 0 ? bad : [v]).join(', ')}`,
    });
    return z.NEVER;
  }
  return parsed as HostPort[];
});

const envSchema = z.object({
  /** HTTP port of the product. Default 3000. */
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  /** Public https base of this product (webhooks for Telegram and the service). Unset: local only. */
  PUBLIC_URL: optionalString,
  /** pino level. Default info. */
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),

  /** Real service (base address without /api). Unset: the embedded sandbox is mounted at the root (/api, /vending, /sandbox) and used. */
  MOMO_BASE_URL: optionalString,
  MOMO_API_KEY: optionalString,
  /**
   * The vending group: its base (with its prefix), the `x-api-key` for name validation, and the Authorization
   * value for bundles and purchases (default `Token <MOMO_VENDING_API_KEY>`). Unset: the embedded sandbox's.
   */
  MOMO_VENDING_URL: optionalString,
  MOMO_VENDING_API_KEY: optionalString,
  MOMO_VENDING_AUTHORIZATION: optionalString,
  /** Service-Version header sent on every request. Default v5 (recipient entries in phone_nos). */
  MOMO_VERSION: z.string().default('v5'),
  /** Basic auth the service uses on its notifications (set by the operator on request). Both or neither. */
  MOMO_WEBHOOK_USER: optionalString,
  MOMO_WEBHOOK_PASSWORD: optionalString,
  /**
   * Production only: let a `*` policy entry (every user of a channel) use money flows. Default false: a
   * production start with such an entry is refused, since anyone who finds the bot could then move money.
   */
  ALLOW_ANY_USER_MONEY: flag,
  /** Answer for a collection that no open request made here matches: accept or reject. Default accept. */
  COLLECTION_VERIFY_DEFAULT: z.enum(['accept', 'reject']).default('accept'),

  /** Keys of the embedded sandbox's seeded organization. */
  SANDBOX_API_KEY: z.string().default('sandbox-key'),
  SANDBOX_VENDING_API_KEY: z.string().default('sandbox-vending-key'),

  /**
   * Redis for conversations, dedup and the notification queue, one server (`redis://…`, `rediss://`
   * for TLS, the password in the URL). Unset, with no REDIS_SENTINELS or REDIS_CLUSTER_NODES: in memory.
   */
  REDIS_URL: optionalString,
  /** Redis behind Sentinel: the Sentinels' `host:port,…` (with REDIS_SENTINEL_NAME). Instead of REDIS_URL. */
  REDIS_SENTINELS: hostPorts,
  /** The master's name the Sentinels monitor (`sentinel monitor <name> …`). Only with REDIS_SENTINELS. */
  REDIS_SENTINEL_NAME: optionalString,
  /** Redis Cluster: some of its masters' `host:port,…` (the rest is discovered). Instead of REDIS_URL. */
  REDIS_CLUSTER_NODES: hostPorts,
  /** Password of the Redis servers (`requirepass`) in Sentinel or Cluster mode. Default none. */
  REDIS_PASSWORD: optionalString,
  /** Password of the Sentinels themselves, when they have one. Default none. */
  REDIS_SENTINEL_PASSWORD: optionalString,
  /** TLS to the Redis servers (and Sentinels) in Sentinel or Cluster mode. Default false. */
  REDIS_TLS: flag,
  /**
   * The start of every key the product writes to Redis (conversations, queues, marks, limits, the funnel), so
   * several products (staging and production, or tests) can share one Redis without seeing each other's keys:
   * letters, digits and `. _ - :`, ending with a colon (`staging:`). No braces (they would take the keys' hash tags
   * away on a cluster), no spaces, never empty. Default momo:.
   */
  REDIS_KEY_PREFIX: z
    .string()
    .default(DEFAULT_KEY_PREFIX)
    .superRefine((v, ctx) => {
      const problem = keyPrefixProblem(v);
      if (problem) ctx.addIssue({ code: 'custom', message: `${JSON.stringify(v)}: ${problem}` });
    }),
  /**
   * Seconds a stop (SIGTERM, SIGINT) may take: its steps are bounded within them (the HTTP drain, the runs and
   * every part's close by 60%, the journal's last writes by 85%, the store's connection by 95%; a step left
   * behind is named in a line), and past them the process exits (code 1) with a line saying what was left,
   * whatever Redis or the service is doing. Default 25, under an orchestrator's usual 30 before SIGKILL.
   */
  SHUTDOWN_GRACE_SECONDS: z.coerce.number().int().min(1).max(3600).default(25),
  /**
   * How long a run's lease lasts unless renewed, ms (renewed every third of it while the run's call is out): a
   * process that died holding one (SIGKILL, a lost machine) has its runs taken over by another process this long
   * after its last renewal. Default 10000: a live process's Redis hiccup of a few seconds does not look like its
   * death, and a person whose payment's process died still hears of it within a quarter of a minute. At least 300.
   */
  RUN_LEASE_MS: z.coerce.number().int().min(300).max(600_000).default(10_000),
  /**
   * How often each process looks for runs whose lease expired (or was handed on by a stopping process), ms: a
   * takeover comes at most this long after. Default 2000: one small Redis read every two seconds. At least 20.
   */
  RUN_SWEEP_MS: z.coerce.number().int().min(20).max(600_000).default(2000),
  /**
   * How often the process that checks the outcomes owed to people (one at a time: a database lock) reads the due
   * ones, ms. Default 5000: the first check comes minutes after a payment's intent, so a few seconds add nothing.
   */
  OWED_POLL_MS: z.coerce.number().int().min(20).max(600_000).default(5000),
  /**
   * How long a notification being told, or a text being sent, is held by its process unless renewed (renewed
   * every third of it), ms: one held by a process that died is told by another this long after the last renewal.
   * Default 30000. At least 300.
   */
  NOTIFY_LEASE_MS: z.coerce.number().int().min(300).max(600_000).default(30_000),
  /**
   * How long a queued notification's or text's lock lasts unless renewed (renewed every half of it), ms; each
   * process checks every two thirds of it for jobs whose lock ran out: one held by a process that died is worked
   * again within about 1.7 times this. Default 15000. At least 300.
   */
  NOTIFY_JOB_LOCK_MS: z.coerce.number().int().min(300).max(600_000).default(15_000),
  /** Idle conversation lifetime in seconds. Default 600 (a chat conversation pauses; USSD ends at 180 s). */
  SESSION_TTL_SECONDS: z.coerce.number().int().positive().default(600),
  /**
   * The PostgreSQL server that keeps the journal of money (`postgres://user:password@host:5432/name`). Unset:
   * an embedded PGlite under DATA_DIR, which is one process and never flushed to disk: the demo's only, so a
   * production start (MOMO_BASE_URL set) must set it.
   */
  DATABASE_URL: optionalString.refine((v) => v === undefined || /^postgres(ql)?:\/\//.test(v), {
    message: 'a postgres:// or postgresql:// URL',
  }),
  /**
   * The journal's owner (`postgres://owner:password@host:5432/name`, the same database as DATABASE_URL, another
   * role): migrations and retention connect with it, and it grants DATABASE_URL's role only what the product
   * needs (read and insert the journal, move an operation's state forward; never change or delete an event, no
   * DDL). Unset: DATABASE_URL's role owns and writes the journal (triggers still refuse a stray change of an
   * event). Needs DATABASE_URL.
   */
  DATABASE_OWNER_URL: optionalString.refine((v) => v === undefined || /^postgres(ql)?:\/\//.test(v), {
    message: 'a postgres:// or postgresql:// URL',
  }),
  /**
   * The longest a statement of the product's may run on the PostgreSQL server, ms (the server's
   * `statement_timeout` on every connection of DATABASE_URL's pool): a database that stops answering (a lock
   * held, a disk stalled) fails the write, and with it the hop, instead of holding it. Default 8000: under the
   * client's own 10 s wait, so the server gives up first and frees what the statement held. Migrations and
   * retention are not bounded by it. Not used by the embedded PGlite.
   */
  DATABASE_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(8000),
  /** Where the embedded PGlite keeps its files (`<DATA_DIR>/pglite`) when DATABASE_URL is unset. Default ./data. */
  DATA_DIR: z.string().min(1).default('./data'),
  /**
   * A file written by PGlite's `dumpDataDir` that the embedded PGlite starts from when DATA_DIR holds no database
   * yet (always with `memory://`): a copy of that database instead of an empty one, which takes seconds of CPU
   * to create. The migrations still run over it (those it lacks). The tests start every embedded database from
   * one migrated dump per run. Unset: an empty database, migrated at start.
   */
  PGLITE_DUMP: optionalString,
  /**
   * Days the journal keeps an operation after its last change; a daily cleanup deletes older ones (never an
   * open one, nor the history of a person who still exists) and writes a receipt of each deletion. Default 2555
   * (seven years), at least 365 in production (MOMO_BASE_URL set), at most 36500 (a century; far larger numbers
   * are no cutoff date the cleanup could compute).
   */
  RETENTION_DAYS: z.coerce.number().int().positive().max(36_500).default(2555),
  /**
   * Days the product's nightly reconciliation re-checks: the days before today (UTC), yesterday included, so a
   * payment whose state changes at the service days after it was made is still caught. Each night asks the
   * service only for what changed since its last look (`modified_after`). Default 7; at most 90.
   */
  RECONCILE_WINDOW_DAYS: z.coerce.number().int().min(1).max(90).default(7),

  /**
   * Time zone of the times people read (IANA name: `Africa/Kampala`, `Africa/Nairobi`, `Africa/Lagos`): /ops
   * pages and the flows' words show local times with the zone's name ("14:05 EAT"). Default UTC ("14:05 UTC").
   * Exports and the journal keep ISO 8601 UTC whatever this says.
   */
  TZ: z
    .string()
    .min(1)
    .default('UTC')
    .refine(isTimeZone, { message: 'not a time zone this runtime knows (an IANA name such as Africa/Nairobi)' }),
  /**
   * The country (ISO 3166 alpha-2) of a caller whose own number does not say one and whose channel has none in
   * CHANNEL_COUNTRIES: their local numbers are read in it, their examples, banks and currencies are its. Also how
   * /ops reads a number searched without its country code (an operator has no number nor channel), and Slack's
   * bulk payouts when CHANNEL_COUNTRIES names no country for Slack. Default UG.
   */
  DEFAULT_COUNTRY: z.string().length(2).default('UG'),
  /**
   * The country of each channel whose callers have no number (`telegram:UG,slack:KE`): theirs when their own
   * number says none (a USSD or WhatsApp caller's number always does); Slack's also reads the numbers of its bulk
   * payouts. Unset: DEFAULT_COUNTRY.
   */
  CHANNEL_COUNTRIES: pairs(
    /^(telegram|slack|whatsapp|ussd)$/,
    (k) => k.toLowerCase(),
    'a channel (telegram, slack, whatsapp, ussd), a colon and a country (ISO 3166 alpha-2)',
    2,
  ),
  /**
   * The currencies the organization allows to be offered when paying, requesting or paying out in bulk (Slack).
   * Which of them a caller is offered: COUNTRY_CURRENCIES and TEST_CURRENCIES.
   */
  CURRENCIES: list('UGX,KES,BXC'),
  /**
   * The currencies each country's callers are offered (`UG:UGX,KE:KES,NG:NGN`; a country named twice is offered
   * both, in this order), of those CURRENCIES allows: a Ugandan caller pays and requests in UGX only. A caller
   * whose country has none of CURRENCIES here is offered none (pay and request say so), never another country's.
   * Default UG:UGX,KE:KES (the service pays these two).
   */
  COUNTRY_CURRENCIES: pairs(
    /^[A-Z]{2}$/,
    (k) => k.toUpperCase(),
    'a country (ISO 3166 alpha-2), a colon and a currency',
    3,
    'UG:UGX,KE:KES',
  ),
  /**
   * The test currencies among CURRENCIES (`BXC`, the service's: no live money moves): offered only to pay one of
   * TEST_NUMBERS, never to request money (the service takes them for outgoing payments only). Default BXC.
   */
  TEST_CURRENCIES: list('BXC'),
  /**
   * The numbers (international `+` form) that may be paid in a TEST_CURRENCIES currency: the service's test
   * numbers. Unset: the embedded sandbox's test numbers (docs/sandbox.md) in the demo, none with MOMO_BASE_URL.
   */
  TEST_NUMBERS: optionalString.transform((v) =>
    v
      ?.split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  ),
  /**
   * Mirrors the organization's "Name match affects payment" setting at the service (contract: Payments rule 3):
   * true (default) when a name that differs from the network's makes a payment fail there. Then a mismatch offers
   * to pay the network's name or stop; false (the check is off at the service) also offers to pay the typed name.
   * Keep it equal to the organization's setting (docs/ux.md).
   */
  NAME_MATCH_AFFECTS_PAYMENT: z.stringbool().default(true),
  /**
   * The organization's email address, sent with a bank transfer whose payer skipped the email (the contract
   * requires one with every bank payment, "e-mail associated with the bank account"; a keypad is a poor place to
   * type one). Set: the email screen offers "Skip". Unset: the email is asked and required; the demo (the
   * embedded sandbox) then sends `payments@example.org`.
   */
  BANK_TRANSFER_EMAIL: optionalString.pipe(z.email('an email address such as payments@example.org').optional()),
  /** Access policy: JSON text, or a path to a JSON file. Unset: the demo policy (docs/security.md, Access policy). */
  ACCESS_POLICY: optionalString,
  ACCESS_POLICY_FILE: optionalString,

  /**
   * USSD: service code shown in the simulator, and the per-screen deadline in ms, from the hop's arrival to its
   * answer (a PIN check and a wait for the service included). Default 3000.
   */
  USSD_SERVICE_CODE: z.string().default('*384*123#'),
  USSD_DEADLINE_MS: z.coerce.number().int().positive().default(3000),
  /**
   * USSD: how long after a session ended unfinished (the network's timeout or release, a new session id) the
   * next dial asks "Continue where you left off?", in seconds. Default 120. 0 turns resuming off.
   */
  USSD_RESUME_SECONDS: z.coerce.number().int().min(0).max(86_400).default(120),
  /**
   * USSD gateways (comma-separated: hubtel, arkesel, nalo, beem) set up to send the whole input so far, every
   * answer joined by `*` as Africa's Talking does, rather than the latest answer. Default none.
   */
  USSD_WHOLE_INPUT: list('').pipe(z.array(z.enum(['hubtel', 'arkesel', 'nalo', 'beem']))),
  /**
   * Outcomes of USSD users' payments, requests and purchases also go to their number by SMS through this
   * provider. `africastalking` (needs AT_USERNAME and AT_API_KEY). Unset: shown at the next dial only.
   */
  SMS_PROVIDER: optionalString.pipe(z.enum(['africastalking']).optional()),
  /** Africa's Talking: the app's username (`sandbox` for its sandbox) and API key, for SMS. */
  AT_USERNAME: optionalString,
  AT_API_KEY: optionalString,
  /** The registered sender id or short code SMS come from. Unset: the provider's default sender. */
  SMS_SENDER_ID: optionalString,
  /** Africa's Talking's SMS endpoint. Default the live one; its sandbox is https://api.sandbox.africastalking.com/version1/messaging. */
  AT_SMS_URL: z.url({ protocol: /^https?$/ }).default('https://api.africastalking.com/version1/messaging'),
  /** Deadline of chat channels before "processing, you will be notified". Default 2500 (Slack acks in 3 s). */
  CHAT_DEADLINE_MS: z.coerce.number().int().positive().default(2500),
  /** Per-user request rate limit (src/ops/ratelimit.ts): messages per window per user per channel. Default 30. */
  RATE_LIMIT_MESSAGES: z.coerce.number().int().positive().default(30),
  /** The rate limit's window in seconds. Default 10. */
  RATE_LIMIT_WINDOW_SECONDS: z.coerce.number().int().positive().default(10),

  // Who may call in (the trust boundary: docs/security.md).
  /**
   * The secret last segment of the gateways' callback URL: `POST /ussd/<gateway>/<USSD_CALLBACK_TOKEN>`.
   * Unset: no token route. In production a USSD route needs this or USSD_ALLOWED_IPS, or it is not served.
   */
  USSD_CALLBACK_TOKEN: secret,
  /**
   * Addresses or CIDR ranges (IPv4 and IPv6, comma-separated) the gateways call from; checked against the
   * caller's address (the socket's, or the one TRUST_PROXY's hops forwarded). Unset: any address.
   */
  USSD_ALLOWED_IPS: optionalString.transform((v, ctx) => {
    if (v === undefined) return undefined;
    const entries = v
      .split(',')
      .map((e) => e.trim())
      .filter(Boolean);
    const bad = entries.filter((e) => !isAddressOrRange(e));
    if (entries.length === 0 || bad.length > 0) {
      ctx.addIssue({
        code: 'custom',
        message: `not an IP address or CIDR range: ${(bad.length > 0 ? bad : [v]).join(', ')}`,
      });
      return z.NEVER;
    }
    return entries;
  }),
  /** Proxy hops in front of the product, for the caller's address (see trustProxy above). Default: none. */
  TRUST_PROXY: trustProxy,
  /**
   * Per-source limit on the gateway and notification routes: requests per window from one address. Default
   * 1000 per 10 s (100 a second): far above one gateway's or the service's traffic to one product, far
   * below what a flood from one address would send. A gateway that sends more needs a higher value.
   */
  SOURCE_RATE_LIMIT_REQUESTS: z.coerce.number().int().positive().default(1000),
  /** The per-source limit's window in seconds. Default 10. */
  SOURCE_RATE_LIMIT_WINDOW_SECONDS: z.coerce.number().int().positive().default(10),
  /**
   * Bearer token for /metrics, /readyz's details, and scripts' reads of /ops/payments.json, /ops/payments.csv,
   * /ops/statements.json, /ops/statements.csv and /ops/people.json (docs/operations.md). Unset: /metrics and
   * /readyz's details open (/healthz is always open).
   */
  OPS_TOKEN: secret,

  /**
   * The operator page /ops (src/ops/page.ts): Basic auth user and password, both or neither. Unset: /ops is
   * open with the embedded sandbox (a demo) and not served at all in production.
   */
  OPS_USER: optionalString,
  OPS_PASSWORD: optionalString,
  /**
   * Dual control of operators (src/people/requests.ts): the /ops changes that wait for a second operator's
   * approval instead of taking effect, comma-separated from `add-person` (a new person with identities),
   * `role` (a person's role, and with it their limits), `reactivate` (a suspended person back), `reset-pin`,
   * `link-code` (a new chat identity on a person), `add-operator`, `suspend-operator`, `reactivate-operator`,
   * `remove-operator`, `correct` (a reconciliation's correction that tells a person or changes a final state,
   * /ops/reconciliation); or `all`, or `none`. Nobody approves their own request. Default: `all` in production
   * (MOMO_BASE_URL set), `none` with the embedded sandbox (the demo, whose single operator has nobody to ask).
   */
  OPS_DUAL_CONTROL: optionalString.refine(
    (v) =>
      v === undefined ||
      v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
        .every((s) => s === 'all' || s === 'none' || (DUAL_CONTROL_ACTIONS as readonly string[]).includes(s)),
    { message: `all, none, or a comma-separated list of ${DUAL_CONTROL_ACTIONS.join(', ')}` },
  ),
  /** UTC days of funnel analytics kept (src/ops/funnel.ts), today included. Default 30: a month to compare with. */
  FUNNEL_DAYS: z.coerce.number().int().min(1).max(366).default(30),

  /**
   * Signed events out (docs/webhooks-out.md): comma-separated URLs the organization's systems listen on; every
   * state change of every payment, request, purchase and payout is posted to each as signed JSON, and retried
   * for three days. https only (http only to this machine: `127.0.0.1`, `localhost`, `[::1]`). Set here only
   * (not on /ops). Unset: nothing is sent. Needs WEBHOOK_SECRET.
   */
  WEBHOOK_ENDPOINTS: list('').refine((urls) => urls.every(isEndpoint), {
    message: 'each an https:// URL (http:// only to 127.0.0.1, localhost or [::1]), comma-separated',
  }),
  /**
   * The key of the events' signature (`Momo-Signature`: HMAC-SHA256, docs/webhooks-out.md), shared with the
   * receivers. At least 16 characters (e.g. `openssl rand -hex 32`).
   */
  WEBHOOK_SECRET: optionalString.refine((v) => v === undefined || v.length >= 16, {
    message: 'at least 16 characters (e.g. `openssl rand -hex 32`)',
  }),
  /** How long one delivery waits for the endpoint's answer, ms; then it counts as failed and is retried. Default 10000. */
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
  /** Deliveries out at once (in the one process that leads). Default 4: a hanging endpoint holds one of them. */
  WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
  /** The first retry's wait, ms, doubled at each failure. Default 30000 (30 s). */
  WEBHOOK_RETRY_BASE_MS: z.coerce.number().int().min(1).default(30_000),
  /** The longest wait between two tries, ms. Default 3600000 (an hour). */
  WEBHOOK_RETRY_MAX_MS: z.coerce.number().int().min(1).default(3_600_000),
  /** Hours a delivery is retried after its event (or after a replay on /ops); then it is `failed`. Default 72. */
  WEBHOOK_RETRY_HOURS: z.coerce.number().positive().max(720).default(72),
  /**
   * Days the delivery log (/ops/deliveries) keeps an event once none of its deliveries is pending. Default 90.
   * The journal keeps the changes themselves for RETENTION_DAYS.
   */
  WEBHOOK_LOG_DAYS: z.coerce.number().int().min(1).max(36_500).default(90),
  /** How often the journal is read for new events and due deliveries, ms. Default 1000. */
  WEBHOOK_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(1000),

  /** Turns Telegram on: a webhook at /telegram/webhook with PUBLIC_URL, long polling without. Unset: off. */
  TELEGRAM_BOT_TOKEN: optionalString,
  /** Secret token Telegram sends on webhook calls. Default: derived from the bot token. */
  TELEGRAM_WEBHOOK_SECRET: optionalString,
  /** Another Bot API server (self-hosted or a test server). Default https://api.telegram.org. */
  TELEGRAM_API_ROOT: optionalString,

  /** Turn Slack on, both together: /slack/events serves the /momo command and interactivity. Unset: off. */
  SLACK_SIGNING_SECRET: optionalString,
  SLACK_BOT_TOKEN: optionalString,
  /** Socket Mode instead of HTTP when set. */
  SLACK_APP_TOKEN: optionalString,
  /** Web API base (a test server). Default https://slack.com/api/. */
  SLACK_API_URL: optionalString,
  /**
   * Maker/checker: the Slack channel id (C…) where payments above a role's `approvalAbove` are held for an
   * approver (src/approvals). Needed when the access policy holds payments; invite the bot to the channel.
   */
  SLACK_APPROVALS_CHANNEL: optionalString.refine(
    (v) => v === undefined || /^[CG][A-Z0-9]{2,30}$/.test(v),
    'a Slack channel id such as C0123ABCD (not its #name)',
  ),
  /** How long a held payment waits for a decision before it expires and its maker is told. Default 24 hours. */
  APPROVAL_TTL_HOURS: z.coerce
    .number()
    .positive()
    .max(24 * 30)
    .default(24),

  /** WhatsApp Cloud API: on when all four of these are set (WHATSAPP_SETTINGS), off when none is. */
  WHATSAPP_TOKEN: optionalString,
  /** The business phone number's id in Meta's dashboard: digits, as it goes into the Graph API path. */
  WHATSAPP_PHONE_NUMBER_ID: optionalString.refine(
    (v) => v === undefined || /^\d{1,32}$/.test(v),
    'the phone number id is digits',
  ),
  /** The app secret that signs Meta's deliveries (X-Hub-Signature-256), and the verify token typed into Meta's dashboard. */
  WHATSAPP_APP_SECRET: optionalString,
  WHATSAPP_VERIFY_TOKEN: optionalString,
  /** Graph API base with its version. Default https://graph.facebook.com/v24.0 (adapters/whatsapp/graph-api.ts). */
  WHATSAPP_API_URL: optionalString.refine((v) => v === undefined || /^https?:\/\/[^\s]+$/.test(v), 'an http(s) URL'),
  /**
   * The approved template for outcomes outside WhatsApp's 24-hour window: `<name>:<language code>`
   * (`payment_update:en_US`; the language defaults to `en`). Unset: such outcomes wait for the user's next message.
   */
  WHATSAPP_TEMPLATE_OUTCOME: optionalString.transform((v, ctx) => {
    if (v === undefined) return undefined;
    const match = /^([a-z0-9_]{1,512})(?::([A-Za-z]{2,3}(?:_[A-Za-z]{2,4})?))?$/.exec(v);
    if (!match) {
      ctx.addIssue({
        code: 'custom',
        message: 'a template name (a-z, 0-9, _) and its language code: payment_update:en_US',
      });
      return z.NEVER;
    }
    return { name: match[1]!, language: match[2] ?? 'en' };
  }),
  /** Mark each message read (blue ticks) when it arrives. Default false: one more Graph API call a message. */
  WHATSAPP_READ_RECEIPTS: z.stringbool().default(false),
});

/** The settings that turn WhatsApp on: all four, or none. */
export const WHATSAPP_SETTINGS = [
  'WHATSAPP_TOKEN',
  'WHATSAPP_PHONE_NUMBER_ID',
  'WHATSAPP_APP_SECRET',
  'WHATSAPP_VERIFY_TOKEN',
] as const;

export type Env = z.infer<typeof envSchema>;

export interface Config extends Env {
  /** True when no MOMO_BASE_URL is set: the embedded sandbox serves the service. */
  embeddedSandbox: boolean;
  /** Where Redis is, in the mode the REDIS_* settings chose; undefined: no Redis (memory). */
  redis?: RedisSettings;
  /** The /ops changes that wait for a second operator (OPS_DUAL_CONTROL, with its default resolved). */
  dualControl: ReadonlySet<DualControlAction>;
}

/** Parses OPS_DUAL_CONTROL (validated by the schema): `all` by default in production, `none` in the demo. */
function dualControlOf(value: string | undefined, production: boolean): ReadonlySet<DualControlAction> {
  const names = (value ?? (production ? 'all' : 'none'))
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (names.includes('all')) return new Set(DUAL_CONTROL_ACTIONS);
  return new Set(names.filter((n): n is DualControlAction => n !== 'none'));
}

/**
 * Why REDIS_URL cannot name one server, or undefined when it can: a host, a port of 1 to 65535 when one is
 * given, and a path that is empty or the database's number. (The client would otherwise start and retry a
 * port 0 for ever, or fail the start with a stack trace instead of a line naming the setting.)
 */
function redisUrlProblem(value: string): string | undefined {
  if (!/^rediss?:\/\/\S+$/.test(value)) return 'a redis:// or rediss:// URL';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'not a URL with a host and a port of 1 to 65535';
  }
  if (!url.hostname) return 'no host';
  if (url.port === '0') return 'port 0';
  if (!/^\/?\d*$/.test(url.pathname)) return 'the path is the database number (/0, /1, ...)';
  return undefined;
}

/** The Redis mode the settings choose; throws ConfigError naming the settings that are mixed or half set. */
function redisSettings(cfg: Env): RedisSettings | undefined {
  const modes = (['REDIS_URL', 'REDIS_SENTINELS', 'REDIS_CLUSTER_NODES'] as const).filter(
    (name) => cfg[name] !== undefined,
  );
  if (modes.length > 1)
    throw new ConfigError(
      `${modes.join(', ')}: set one of REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES, not several`,
    );
  if ((cfg.REDIS_SENTINELS === undefined) !== (cfg.REDIS_SENTINEL_NAME === undefined)) {
    const missing = cfg.REDIS_SENTINELS === undefined ? 'REDIS_SENTINELS' : 'REDIS_SENTINEL_NAME';
    throw new ConfigError(
      `${missing}: REDIS_SENTINELS and REDIS_SENTINEL_NAME go together (the Sentinels and the master's name)`,
    );
  }
  const extras = (['REDIS_PASSWORD', 'REDIS_SENTINEL_PASSWORD', 'REDIS_TLS'] as const).filter((name) =>
    name === 'REDIS_TLS' ? cfg.REDIS_TLS : cfg[name] !== undefined,
  );
  if (cfg.REDIS_SENTINEL_PASSWORD !== undefined && cfg.REDIS_SENTINELS === undefined) {
    throw new ConfigError('REDIS_SENTINEL_PASSWORD: only with REDIS_SENTINELS');
  }
  if (cfg.REDIS_URL !== undefined || modes.length === 0) {
    if (extras.length > 0) {
      throw new ConfigError(
        `${extras.join(', ')}: only with REDIS_SENTINELS or REDIS_CLUSTER_NODES (a REDIS_URL carries its own: redis://:password@host:port, rediss:// for TLS)`,
      );
    }
    const problem = cfg.REDIS_URL === undefined ? undefined : redisUrlProblem(cfg.REDIS_URL);
    if (problem) {
      throw new ConfigError(
        `REDIS_URL: ${problem} (redis://[:password@]host[:port][/database], rediss:// for TLS; for Sentinel set REDIS_SENTINELS and REDIS_SENTINEL_NAME, for a cluster REDIS_CLUSTER_NODES)`,
      );
    }
    return cfg.REDIS_URL === undefined ? undefined : { mode: 'server', url: cfg.REDIS_URL };
  }
  const password = cfg.REDIS_PASSWORD !== undefined ? { password: cfg.REDIS_PASSWORD } : {};
  if (cfg.REDIS_SENTINELS !== undefined) {
    const sentinelPassword =
      cfg.REDIS_SENTINEL_PASSWORD !== undefined ? { sentinelPassword: cfg.REDIS_SENTINEL_PASSWORD } : {};
    return {
      mode: 'sentinel',
      sentinels: cfg.REDIS_SENTINELS,
      name: cfg.REDIS_SENTINEL_NAME!,
      ...password,
      ...sentinelPassword,
      tls: cfg.REDIS_TLS,
    };
  }
  return { mode: 'cluster', nodes: cfg.REDIS_CLUSTER_NODES!, ...password, tls: cfg.REDIS_TLS };
}

/** True when all four WhatsApp settings are set (loadConfig refuses a start with some of them only). */
export const whatsappOn = (config: Env): boolean => WHATSAPP_SETTINGS.every((name) => config[name] !== undefined);

/** A setting that makes the product refuse to start; its message is one line that names the setting. */
export class ConfigError extends Error {}

/** Parses the environment; throws ConfigError naming every bad setting, on one line. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration: ${lines.join('; ')}`);
  }
  const cfg = parsed.data;
  if (cfg.MOMO_BASE_URL && !cfg.MOMO_API_KEY)
    throw new ConfigError('MOMO_API_KEY: MOMO_BASE_URL is set but MOMO_API_KEY is not');
  // Half a credential pair would leave the receiver open while the operator believes it closed.
  if (Boolean(cfg.MOMO_WEBHOOK_USER) !== Boolean(cfg.MOMO_WEBHOOK_PASSWORD)) {
    const missing = cfg.MOMO_WEBHOOK_USER ? 'MOMO_WEBHOOK_PASSWORD' : 'MOMO_WEBHOOK_USER';
    throw new ConfigError(`${missing}: set both MOMO_WEBHOOK_USER and MOMO_WEBHOOK_PASSWORD, or neither`);
  }
  if (cfg.SMS_PROVIDER === 'africastalking') {
    const unset = (['AT_USERNAME', 'AT_API_KEY'] as const).filter((name) => cfg[name] === undefined);
    if (unset.length > 0)
      throw new ConfigError(`${unset.join(', ')}: SMS_PROVIDER=africastalking needs AT_USERNAME and AT_API_KEY`);
  }
  if (cfg.CURRENCIES.length === 0) throw new ConfigError('CURRENCIES must name at least one currency');
  const twice = Object.entries(cfg.CHANNEL_COUNTRIES).filter(([, countries]) => countries.length > 1);
  if (twice.length > 0)
    throw new ConfigError(`CHANNEL_COUNTRIES names ${twice.map(([c]) => c).join(', ')} twice: one country a channel`);
  const missing = WHATSAPP_SETTINGS.filter((name) => cfg[name] === undefined);
  if (missing.length > 0 && missing.length < WHATSAPP_SETTINGS.length) {
    throw new ConfigError(
      `WhatsApp is half configured: set ${missing.join(', ')} too (or unset every WHATSAPP_ setting to turn it off)`,
    );
  }
  if ((cfg.OPS_USER === undefined) !== (cfg.OPS_PASSWORD === undefined)) {
    throw new ConfigError(
      `OPS_USER and OPS_PASSWORD go together: ${cfg.OPS_USER === undefined ? 'OPS_USER' : 'OPS_PASSWORD'} is not set`,
    );
  }
  if (cfg.OPS_USER?.includes(':'))
    throw new ConfigError('OPS_USER cannot contain ":" (Basic auth splits the user from the password there)');
  if (cfg.DATABASE_OWNER_URL && !cfg.DATABASE_URL)
    throw new ConfigError(
      "DATABASE_OWNER_URL: set without DATABASE_URL (the product's own role on the same database): set both, or neither",
    );
  if (cfg.WEBHOOK_ENDPOINTS.length > 0 && !cfg.WEBHOOK_SECRET)
    throw new ConfigError('WEBHOOK_SECRET: WEBHOOK_ENDPOINTS is set, and events are never sent unsigned');
  const redis = redisSettings(cfg);
  return {
    ...cfg,
    embeddedSandbox: !cfg.MOMO_BASE_URL,
    dualControl: dualControlOf(cfg.OPS_DUAL_CONTROL, Boolean(cfg.MOMO_BASE_URL)),
    ...(redis ? { redis } : {}),
  };
}
