/**
 * What a start refuses and what it warns about. Production mode is any start without the embedded sandbox
 * (MOMO_BASE_URL set): real money moves, so a start that would be unsafe does not happen. The refusal is a
 * ConfigError whose message is one line naming the setting to fix (main.ts prints it and exits 2).
 *
 * Refused in production:
 * - no access policy (the demo policy lets every user of every channel pay, USSD with PIN 1234);
 * - a `*` entry (every other user of a channel) that carries a PIN: a PIN every caller shares is no PIN,
 *   whatever ALLOW_ANY_USER_MONEY says;
 * - a `*` entry whose role may use a money flow (pay, request, data, pin), unless ALLOW_ANY_USER_MONEY=true;
 * - a USSD entry whose role may use a money flow but that has no PIN: USSD confirms money with the PIN, so
 *   that user could never pay (and a `*` USSD entry can have none);
 * - no DATABASE_URL: the embedded PGlite is one process's alone and never flushes to disk (docs/journal.md), so
 *   it is for the demo only; real money is kept by a PostgreSQL server;
 * - an OPS_PASSWORD too easy to guess (src/people/password-rules.ts: the rule every operator's password follows);
 * - RETENTION_DAYS under 365: a production journal keeps a year of money at least;
 * - a channel half configured: Slack's signing secret without its bot token or the other way round (or an
 *   app token without both), Telegram's webhook secret or API root without its bot token: the operator
 *   believes a channel is on (or protected) when it is not.
 * Refused everywhere (src/config.ts): half the notification credentials, TRUST_PROXY=true, a callback or
 * ops token shorter than 16 characters, an allow-list entry that is not an address or range.
 *
 * Warned about in production: notifications without credentials (anyone can post one; final states are
 * then confirmed by a read before anyone is told), USSD routes not served (neither USSD_CALLBACK_TOKEN nor
 * USSD_ALLOWED_IPS), /metrics and /readyz details open (no OPS_TOKEN), no REDIS_URL (conversations and rate limits
 * kept per process; daily totals and PIN tries are the database's either way).
 */
import { ConfigError, type Config } from './config.js';
import { loadAccessPolicy, MONEY_FLOWS, type AccessPolicy } from './conversation/calls/access-policy.js';
import { maskPhone } from './log.js';
import { passwordWeakness } from './people/password-rules.js';

export interface StartChecks {
  /** The access policy the product runs with (the demo policy with the embedded sandbox and no policy set). */
  policy: AccessPolicy;
  /** One line each, logged at start. */
  warnings: string[];
}

/** Why the USSD routes are not served in production, or undefined when they are. */
export function ussdRoutesOff(config: Config): string | undefined {
  if (config.embeddedSandbox || config.USSD_CALLBACK_TOKEN || config.USSD_ALLOWED_IPS) return undefined;
  return 'USSD routes are not served: set USSD_CALLBACK_TOKEN (the callback URL is then /ussd/<gateway>/<token>) or USSD_ALLOWED_IPS';
}

/** The fewest days a production journal keeps money (a year of statements, disputes and audits). */
export const MIN_PRODUCTION_RETENTION_DAYS = 365;

/** Loads the policy and checks the start; throws ConfigError (one line, naming the setting) to refuse it. */
export function checkStart(config: Config): StartChecks {
  const policy = readPolicy(config);
  if (config.embeddedSandbox) return { policy, warnings: [] };

  const refuse = (line: string): never => {
    throw new ConfigError(line);
  };
  if (!config.ACCESS_POLICY && !config.ACCESS_POLICY_FILE) {
    refuse(
      'ACCESS_POLICY: MOMO_BASE_URL is set (production) but no access policy is: set ACCESS_POLICY or ACCESS_POLICY_FILE (without one every user could pay, with PIN 1234)',
    );
  }
  for (const entry of policy.entries()) {
    const name = `users.${entry.channel}.${entry.channel === 'ussd' && entry.id !== '*' ? maskPhone(entry.id) : entry.id}`;
    const money = entry.flows.filter((f) => MONEY_FLOWS.includes(f));
    if (entry.id === '*' && entry.hasPin) {
      refuse(
        `ACCESS_POLICY: ${name} carries a PIN, which every caller would share: give each USSD user their own PIN (a * entry never carries one)`,
      );
    }
    if (entry.id === '*' && money.length > 0 && !config.ALLOW_ANY_USER_MONEY) {
      refuse(
        `ALLOW_ANY_USER_MONEY: ${name} (role ${entry.role}) lets every user use ${money.join(', ')}: list users by id in ACCESS_POLICY, or set ALLOW_ANY_USER_MONEY=true`,
      );
    }
    if (entry.channel === 'ussd' && money.length > 0 && !entry.hasPin) {
      refuse(
        `ACCESS_POLICY: ${name} (role ${entry.role}) may use ${money.join(', ')} but has no PIN, and USSD confirms money with one: give it a PIN hash`,
      );
    }
  }
  if (config.RETENTION_DAYS < MIN_PRODUCTION_RETENTION_DAYS) {
    refuse(
      `RETENTION_DAYS: ${config.RETENTION_DAYS} days is under the ${MIN_PRODUCTION_RETENTION_DAYS} a production journal keeps (MOMO_BASE_URL is set): set RETENTION_DAYS to ${MIN_PRODUCTION_RETENTION_DAYS} or more (default 2555, seven years)`,
    );
  }
  const slackSecret = Boolean(config.SLACK_SIGNING_SECRET);
  const slackToken = Boolean(config.SLACK_BOT_TOKEN);
  if (slackSecret !== slackToken) {
    const [set, missing] = slackSecret
      ? ['SLACK_SIGNING_SECRET', 'SLACK_BOT_TOKEN']
      : ['SLACK_BOT_TOKEN', 'SLACK_SIGNING_SECRET'];
    refuse(`${missing}: ${set} is set without it, so Slack would be off: set both, or neither`);
  }
  if (policy.holdsPayments() && !(slackSecret && slackToken && config.SLACK_APPROVALS_CHANNEL)) {
    refuse(
      'SLACK_APPROVALS_CHANNEL: the access policy holds payments for approval (approvalAbove) but no approvals channel is set up: set SLACK_APPROVALS_CHANNEL with Slack on, or remove approvalAbove',
    );
  }
  if (config.SLACK_APP_TOKEN && !slackSecret)
    refuse('SLACK_SIGNING_SECRET: SLACK_APP_TOKEN is set without SLACK_SIGNING_SECRET and SLACK_BOT_TOKEN');
  if (!config.TELEGRAM_BOT_TOKEN) {
    for (const setting of ['TELEGRAM_WEBHOOK_SECRET', 'TELEGRAM_API_ROOT'] as const) {
      if (config[setting]) refuse(`TELEGRAM_BOT_TOKEN: ${setting} is set without it, so Telegram would be off`);
    }
  }
  const opsPasswordWeakness =
    config.OPS_USER && config.OPS_PASSWORD ? passwordWeakness(config.OPS_PASSWORD, config.OPS_USER) : null;
  if (opsPasswordWeakness)
    refuse(`OPS_PASSWORD: ${opsPasswordWeakness}, and it signs in an operator of real money (production)`);
  if (!config.DATABASE_URL) {
    refuse(
      'DATABASE_URL: MOMO_BASE_URL is set (production) but DATABASE_URL is not, and the embedded PGlite under DATA_DIR is for the demo only (one process, never flushed to disk): set DATABASE_URL to a PostgreSQL server',
    );
  }

  const warnings: string[] = [];
  if (!config.MOMO_WEBHOOK_USER) {
    warnings.push(
      'MOMO_WEBHOOK_USER and MOMO_WEBHOOK_PASSWORD are not set: notifications are not authenticated, so a final state is confirmed by a read of the service before anyone is told; ask the operator for notification credentials',
    );
  }
  const off = ussdRoutesOff(config);
  if (off) warnings.push(off);
  if (!config.OPS_TOKEN)
    warnings.push(
      'OPS_TOKEN is not set: /metrics and the details of /readyz are open to anyone who reaches the product',
    );
  if (!config.redis)
    warnings.push(
      "REDIS_URL is not set (nor REDIS_SENTINELS or REDIS_CLUSTER_NODES): sessions and rate limits are this process's alone, so run only one process",
    );
  return { policy, warnings };
}

/** The configured policy (or the demo one); a policy that cannot be read or is invalid refuses the start. */
function readPolicy(config: Config): AccessPolicy {
  try {
    return loadAccessPolicy({ policy: config.ACCESS_POLICY, file: config.ACCESS_POLICY_FILE });
  } catch (err) {
    const setting = config.ACCESS_POLICY ? 'ACCESS_POLICY' : 'ACCESS_POLICY_FILE';
    // One line: the policy's problems, listed one a line under a heading, joined by "; " after its colon.
    const reason = (err instanceof Error ? err.message : String(err))
      .replace(/:\s*\n\s*/, ': ')
      .replace(/\s*\n\s*/g, '; ');
    throw new ConfigError(`${setting}: ${reason}`);
  }
}
