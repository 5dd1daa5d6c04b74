/**
 * Production starts that would be unsafe do not happen: `node dist/src/main.js` as an operator starts it
 * (a child process, MOMO_BASE_URL set, so no embedded sandbox) exits non-zero with one line on stderr that
 * names the setting to fix. Before, each of these started and ran: the demo policy against the real service
 * (every number a user, PIN 1234), half the notification credentials (the receiver open), and so on.
 */
import { spawn } from 'node:child_process';
import { productArgs, ROOT } from '../product.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPin } from '../../src/conversation/calls/access-policy.js';
import { serverDatabase, type ServerDatabase } from '../journal/server-database.js';
import { embedded } from '../journal/templates.js';

const PIN_HASH = hashPin('4821');
const teller = {
  flows: ['pay', 'request', 'check'],
  perPaymentLimit: { UGX: '500000' },
  dailyLimit: { UGX: '2000000' },
};
const viewer = { flows: ['check'], perPaymentLimit: {}, dailyLimit: {} };
const policy = (users: Record<string, Record<string, unknown>>, roles: Record<string, unknown> = { teller, viewer }) =>
  JSON.stringify({ roles, users: { telegram: {}, slack: {}, ussd: {}, ...users } });
const SAFE_POLICY = policy({
  ussd: { '+256772123456': { role: 'teller', pin: PIN_HASH } },
  telegram: { '123': { role: 'teller' } },
});

/** Stands for the test's own PostgreSQL database (made in beforeAll) in the cases' settings. */
const DATABASE = 'postgres://the-test-database';

/** A production environment that starts; each case breaks one thing. */
const PRODUCTION = {
  DATABASE_URL: DATABASE,
  // Nothing listens there: a start makes no call to the service without PUBLIC_URL.
  MOMO_BASE_URL: 'http://127.0.0.1:9',
  MOMO_API_KEY: 'live-key',
  ACCESS_POLICY: SAFE_POLICY,
  USSD_CALLBACK_TOKEN: 'cb-0123456789abcdef0123456789',
  MOMO_WEBHOOK_USER: 'momo',
  MOMO_WEBHOOK_PASSWORD: 'webhook-password',
};

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

let database: ServerDatabase | undefined;

/** Runs `node dist/src/main.js` with exactly `env`; stops it (SIGTERM) once it listens. */
function runMain(env: Record<string, string | undefined>): Promise<Run> {
  if (env.DATABASE_URL === DATABASE) env = { ...env, DATABASE_URL: database!.url };
  const child = spawn(process.execPath, productArgs(), {
    cwd: ROOT,
    env: { PATH: process.env.PATH, PORT: '0', LOG_LEVEL: 'warn', ...embedded(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    if (/listening on/.test(stdout)) child.kill('SIGTERM');
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // timer-ok: a bound, not a wait: the process's exit ends it.
  const timer = setTimeout(() => child.kill('SIGKILL'), 100_000);
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** Every start of this file, run before the tests (each is a process that starts tsx: seconds each on a busy machine). */
const CASES = {
  noPolicy: { ...PRODUCTION, ACCESS_POLICY: undefined },
  anyoneMoney: { ...PRODUCTION, ACCESS_POLICY: policy({ telegram: { '*': { role: 'teller' } } }) },
  demoPolicy: {
    ...PRODUCTION,
    ACCESS_POLICY: policy({ telegram: { '*': { role: 'teller' } }, ussd: { '*': { role: 'teller', pin: PIN_HASH } } }),
  },
  sharedPin: {
    ...PRODUCTION,
    ACCESS_POLICY: policy({ ussd: { '*': { role: 'teller', pin: PIN_HASH } } }),
    ALLOW_ANY_USER_MONEY: 'true',
  },
  userOnly: { ...PRODUCTION, MOMO_WEBHOOK_PASSWORD: undefined },
  passwordOnly: { ...PRODUCTION, MOMO_WEBHOOK_USER: undefined },
  pinless: { ...PRODUCTION, ACCESS_POLICY: policy({ ussd: { '+256772123456': { role: 'teller' } } }) },
  halfSlack: { ...PRODUCTION, SLACK_SIGNING_SECRET: 'slack-secret' },
  halfTelegram: { ...PRODUCTION, TELEGRAM_WEBHOOK_SECRET: 'telegram-secret-0123' },
  trustEveryProxy: { ...PRODUCTION, TRUST_PROXY: 'true' },
  shortToken: { ...PRODUCTION, USSD_CALLBACK_TOKEN: 'secret' },
  badAllowList: { ...PRODUCTION, USSD_ALLOWED_IPS: '10.0.0.0/33' },
  brokenPolicy: { ...PRODUCTION, ACCESS_POLICY: '{"roles": {}' },
  approvalsNowhere: {
    ...PRODUCTION,
    ACCESS_POLICY: policy(
      { telegram: { '123': { role: 'maker' } } },
      { maker: { ...teller, approvalAbove: { UGX: '100000' } } },
    ),
  },
  approvalsChannelName: { ...PRODUCTION, SLACK_APPROVALS_CHANNEL: '#finance' },
  // Nothing is reached: the start is refused before it opens a database (or connects to Redis).
  noDatabase: { ...PRODUCTION, DATABASE_URL: undefined },
  redisWithoutDatabase: { ...PRODUCTION, DATABASE_URL: undefined, REDIS_URL: 'redis://127.0.0.1:9/0' },
  weakOpsPassword: { ...PRODUCTION, OPS_USER: 'finance', OPS_PASSWORD: 'aaaaaaaaaaaa' },
  safe: PRODUCTION,
  // Allowed, with warnings: no notification credentials, no USSD token; and a * entry that may only check.
  noCredentials: {
    ...PRODUCTION,
    ACCESS_POLICY: policy({ telegram: { '*': { role: 'viewer' } } }),
    MOMO_WEBHOOK_USER: undefined,
    MOMO_WEBHOOK_PASSWORD: undefined,
    USSD_CALLBACK_TOKEN: undefined,
  },
  demo: {},
};
const runs = {} as Record<keyof typeof CASES, Run>;
beforeAll(async () => {
  database = await serverDatabase('production_start', { empty: true });
  // Two at a time, as the suite runs files (two cores): a refused start costs about a second of CPU (it
  // refuses before the product's modules load), a started one a few.
  const queue = Object.entries(CASES) as Array<[keyof typeof CASES, Record<string, string | undefined>]>;
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) runs[next[0]] = await runMain(next[1]);
  };
  await Promise.all([worker(), worker()]);
}, 300_000);
afterAll(async () => {
  await database?.drop();
});

/** The refusal: exit 2, nothing on stdout (it never listened), and exactly one line on stderr. */
function refusal(run: Run): string {
  expect(run.code, run.stderr).toBe(2);
  expect(run.stdout).toBe('');
  const lines = run.stderr.split('\n').filter((line) => line.trim() !== '');
  expect(lines, run.stderr).toHaveLength(1);
  return lines[0]!;
}

/** A start that listened and then stopped cleanly on SIGTERM. */
function started(run: Run): string {
  expect(run.stdout, run.stderr).toMatch(/listening on/);
  expect([run.code, run.signal], run.stderr).toEqual([0, null]);
  return run.stdout;
}

describe('a production start is refused, with one line naming the setting', () => {
  it('without an access policy (the demo policy would run against the real service)', () => {
    expect(refusal(runs.noPolicy)).toMatch(/^ACCESS_POLICY: .*ACCESS_POLICY_FILE/);
  });

  it('with a * entry that may move money, unless ALLOW_ANY_USER_MONEY=true', () => {
    expect(refusal(runs.anyoneMoney)).toMatch(/^ALLOW_ANY_USER_MONEY: users\.telegram\.\* .*pay, request/);
    // The demo policy itself, given explicitly.
    expect(refusal(runs.demoPolicy)).toMatch(/^ALLOW_ANY_USER_MONEY: users\.telegram\.\*/);
    // A * entry that may only check collections is no money risk: started below (noCredentials).
  });

  it('with a * entry that carries a PIN, even with ALLOW_ANY_USER_MONEY=true', () => {
    expect(refusal(runs.sharedPin)).toMatch(/^ACCESS_POLICY: users\.ussd\.\* carries a PIN/);
  });

  it('with half the notification credentials', () => {
    expect(refusal(runs.userOnly)).toMatch(/^MOMO_WEBHOOK_PASSWORD: /);
    expect(refusal(runs.passwordOnly)).toMatch(/^MOMO_WEBHOOK_USER: /);
  });

  it('with a USSD user who may move money but has no PIN', () => {
    expect(refusal(runs.pinless)).toMatch(/^ACCESS_POLICY: users\.ussd\.\+2567\*+456 .*no PIN/);
  });

  it('without DATABASE_URL, with Redis or without (the embedded PGlite is the demo only: one process, no flush)', () => {
    expect(refusal(runs.noDatabase)).toMatch(
      /^DATABASE_URL: MOMO_BASE_URL is set \(production\) but DATABASE_URL is not/,
    );
    expect(refusal(runs.redisWithoutDatabase)).toMatch(/^DATABASE_URL: MOMO_BASE_URL is set/);
  });

  it('with an operator password that is easy to guess (aaaaaaaaaaaa)', () => {
    expect(refusal(runs.weakOpsPassword)).toMatch(/^OPS_PASSWORD: this password is too easy to guess \(Repeated/);
  });

  it('with Slack or Telegram half configured', () => {
    expect(refusal(runs.halfSlack)).toMatch(/^SLACK_BOT_TOKEN: SLACK_SIGNING_SECRET is set/);
    expect(refusal(runs.halfTelegram)).toMatch(/^TELEGRAM_BOT_TOKEN: TELEGRAM_WEBHOOK_SECRET is set/);
  });

  it('with payments held for approval (approvalAbove) but no approvals channel, or a channel given by name', () => {
    expect(refusal(runs.approvalsNowhere)).toMatch(/^SLACK_APPROVALS_CHANNEL: the access policy holds payments/);
    expect(refusal(runs.approvalsChannelName)).toMatch(/SLACK_APPROVALS_CHANNEL: a Slack channel id/);
  });

  it('with settings that would open a door: TRUST_PROXY=true, a short callback token, a bad allow-list entry, a broken policy', () => {
    expect(refusal(runs.trustEveryProxy)).toMatch(/TRUST_PROXY: .*never true/);
    expect(refusal(runs.shortToken)).toMatch(/USSD_CALLBACK_TOKEN: at least 16 characters/);
    expect(refusal(runs.badAllowList)).toMatch(/USSD_ALLOWED_IPS: not an IP address or CIDR range: 10\.0\.0\.0\/33/);
    expect(refusal(runs.brokenPolicy)).toMatch(/^ACCESS_POLICY: /);
  });
});

describe('a production start that is allowed', () => {
  it('starts with a safe policy: the token route in the banner (not the token), no simulator', () => {
    const out = started(runs.safe);
    expect(out).toMatch(/POST http:\/\/localhost:\d+\/ussd\/africastalking\/<USSD_CALLBACK_TOKEN>/);
    expect(out).not.toMatch(/simulator|cb-0123456789abcdef/);
    expect(out).not.toMatch(/MOMO_WEBHOOK_USER and MOMO_WEBHOOK_PASSWORD are not set/);
  });

  it('without notification credentials or a USSD token, with a * entry that only checks: starts, and the log says what that means', () => {
    const out = started(runs.noCredentials);
    expect(out).toMatch(/"level":40,[^\n]*MOMO_WEBHOOK_USER and MOMO_WEBHOOK_PASSWORD are not set/);
    expect(out).toMatch(/USSD routes are not served: set USSD_CALLBACK_TOKEN/);
  });

  it('the demo (no MOMO_BASE_URL) starts as before: demo policy, open USSD routes, simulator', () => {
    const out = started(runs.demo);
    expect(out).toMatch(/POST http:\/\/localhost:\d+\/ussd\/africastalking /);
    expect(out).toMatch(/simulator/);
  });
});
