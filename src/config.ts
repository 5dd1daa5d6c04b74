/**
 * Environment -> typed Config. Every setting has an embedded default, so `npm start` with no environment
 * runs the embedded sandbox, the memory session store, the USSD endpoint and the USSD simulator.
 */
import { z } from 'zod';

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
  MOMO_VENDING_URL: optionalString,
  MOMO_VENDING_API_KEY: optionalString,
  MOMO_VENDING_AUTHORIZATION: optionalString,
  /** Service-Version header sent on every request. Default v5 (recipient entries in phone_nos). */
  MOMO_VERSION: z.string().default('v5'),
  /** Basic auth the service uses on its notifications (set by the operator on request). */
  MOMO_WEBHOOK_USER: optionalString,
  MOMO_WEBHOOK_PASSWORD: optionalString,
  /** Answer for a collection that no open request made here matches: accept or reject. Default accept. */
  COLLECTION_VERIFY_DEFAULT: z.enum(['accept', 'reject']).default('accept'),

  /** Keys of the embedded sandbox's seeded organization. */
  SANDBOX_API_KEY: z.string().default('sandbox-key'),
  SANDBOX_VENDING_API_KEY: z.string().default('sandbox-vending-key'),

  /** Redis for sessions, dedup, daily totals and the notification queue. Unset: in memory. */
  REDIS_URL: optionalString,
  /** Idle conversation lifetime in seconds. Default 600 (a chat conversation pauses; USSD ends at 180 s). */
  SESSION_TTL_SECONDS: z.coerce.number().int().positive().default(600),

  /** Country used to read local phone numbers (ISO 3166 alpha-2). Default UG. */
  DEFAULT_COUNTRY: z.string().length(2).default('UG'),
  /** Currencies offered when paying or requesting, first is the default. */
  CURRENCIES: list('UGX,KES,BXC'),
  /** Access policy: JSON text, or a path to a JSON file. Unset: the demo policy (see README). */
  ACCESS_POLICY: optionalString,
  ACCESS_POLICY_FILE: optionalString,

  /** USSD: service code shown in the simulator, and the per-screen deadline in ms. Default 3000. */
  USSD_SERVICE_CODE: z.string().default('*384*123#'),
  USSD_DEADLINE_MS: z.coerce.number().int().positive().default(3000),
  /** Deadline of chat channels before "processing, you will be notified". Default 2500 (Slack acks in 3 s). */
  CHAT_DEADLINE_MS: z.coerce.number().int().positive().default(2500),
  /** Per-user request rate limit (src/ops/ratelimit.ts): messages per window per user per channel. Default 30. */
  RATE_LIMIT_MESSAGES: z.coerce.number().int().positive().default(30),
  /** The rate limit's window in seconds. Default 10. */
  RATE_LIMIT_WINDOW_SECONDS: z.coerce.number().int().positive().default(10),

  /**
   * The operator page /ops (src/ops/page.ts): Basic auth user and password, both or neither. Unset: /ops is
   * open with the embedded sandbox (a demo) and not served at all in production.
   */
  OPS_USER: optionalString,
  OPS_PASSWORD: optionalString,
  /** UTC days of funnel analytics kept (src/ops/funnel.ts), today included. Default 30: a month to compare with. */
  FUNNEL_DAYS: z.coerce.number().int().min(1).max(366).default(30),

  TELEGRAM_BOT_TOKEN: optionalString,
  /** Secret token Telegram sends on webhook calls. Default: derived from the bot token. */
  TELEGRAM_WEBHOOK_SECRET: optionalString,
  /** Another Bot API server (self-hosted or a test server). Default https://api.telegram.org. */
  TELEGRAM_API_ROOT: optionalString,

  SLACK_SIGNING_SECRET: optionalString,
  SLACK_BOT_TOKEN: optionalString,
  /** Socket Mode instead of HTTP when set. */
  SLACK_APP_TOKEN: optionalString,
  /** Web API base (a test server). Default https://slack.com/api/. */
  SLACK_API_URL: optionalString,
});

export type Env = z.infer<typeof envSchema>;

export interface Config extends Env {
  /** True when no MOMO_BASE_URL is set: the embedded sandbox serves the service. */
  embeddedSandbox: boolean;
}

export class ConfigError extends Error {}

/** Parses the environment; throws ConfigError naming every bad setting. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  const cfg = parsed.data;
  if (cfg.MOMO_BASE_URL && !cfg.MOMO_API_KEY) throw new ConfigError('MOMO_BASE_URL is set but MOMO_API_KEY is not');
  if (cfg.CURRENCIES.length === 0) throw new ConfigError('CURRENCIES must name at least one currency');
  if ((cfg.OPS_USER === undefined) !== (cfg.OPS_PASSWORD === undefined)) {
    throw new ConfigError(`OPS_USER and OPS_PASSWORD go together: ${cfg.OPS_USER === undefined ? 'OPS_USER' : 'OPS_PASSWORD'} is not set`);
  }
  if (cfg.OPS_USER?.includes(':')) throw new ConfigError('OPS_USER cannot contain ":" (Basic auth splits the user from the password there)');
  return { ...cfg, embeddedSandbox: !cfg.MOMO_BASE_URL };
}
