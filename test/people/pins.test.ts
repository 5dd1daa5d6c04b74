/**
 * PINs people own and chat accounts they link, through the product as it runs (Africa's Talking USSD, Telegram
 * by long polling against a local Bot API server, the People page), on real PostgreSQL and Redis:
 * - Change PIN from the menu: the current PIN first, a weak new PIN refused with its reason, the new PIN twice;
 * - a person whose PIN an operator reset is asked the one-time code before anything else, cannot pay until they
 *   set a PIN from it, and a code works once (an older one, or one used, is refused);
 * - "Link a chat app" on USSD shows a code once; `/link CODE` on Telegram adds that account to the person, whose
 *   next message there after a reset asks the one-time code first too;
 * - and no PIN or code is ever in Redis or the journal.
 *
 * The product runs on a Redis server of this file's own (its whole database is searched for secrets, and its
 * link-code and PIN counters must start from nothing on every run), started on a free port and stopped after.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type RunningApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { hashPin } from '../../src/conversation/calls/access-policy.js';
import { createLogger } from '../../src/log.js';
import { BOT_TOKEN, startFakeBotApi, type FakeBotApi } from '../adapters/telegram/fake-bot-api.js';
import { textUpdate, USER as TELEGRAM_USER } from '../adapters/telegram/harness.js';
import { AtSession } from '../e2e/helpers.js';
import { serverDatabase, type ServerDatabase } from '../journal/databases.js';
import { startOwnRedis, stopAll } from '../redis/servers.js';
import { codeTextedTo, PIN_CODE_TEXT, postForm, signIn } from './ops-session.js';

const OPS = { user: 'ops-lead', password: 'a long operator password' };
const OPS_TOKEN = 'ops-token-0123456789abcdef';
const AMINA = '+256700555001';
const BRIAN = '+256700555002';
const POLICY = {
  roles: {
    teller: { flows: ['pay', 'check'], perPaymentLimit: { UGX: '500000' }, dailyLimit: { UGX: '2000000' } },
  },
  users: {
    ussd: {
      [AMINA]: { role: 'teller', person: 'amina', pin: hashPin('4821') },
      [BRIAN]: { role: 'teller', person: 'brian', pin: hashPin('4821') },
    },
    telegram: {},
    slack: {},
    whatsapp: {},
  },
};

let database: ServerDatabase;
let redis: Redis;
let bot: FakeBotApi;
let app: RunningApp;
beforeAll(async () => {
  database = await serverDatabase('people_pins');
  const server = await startOwnRedis();
  const redisUrl = `redis://127.0.0.1:${server.port}`;
  redis = new Redis(redisUrl);
  bot = await startFakeBotApi();
  app = await startApp(
    loadConfig({
      PORT: '0',
      LOG_LEVEL: 'silent',
      OPS_USER: OPS.user,
      OPS_PASSWORD: OPS.password,
      OPS_TOKEN,
      DATABASE_URL: database.url,
      REDIS_URL: redisUrl,
      TELEGRAM_BOT_TOKEN: BOT_TOKEN,
      TELEGRAM_API_ROOT: bot.apiRoot,
      ACCESS_POLICY: JSON.stringify(POLICY),
      // Many dials of one number in a few seconds: the per-user message limit is not what is tested here.
      RATE_LIMIT_MESSAGES: '1000',
    }),
    { logger: createLogger('silent') },
  );
});
afterAll(async () => {
  await app?.stop();
  await bot?.close();
  await database?.drop();
  await redis?.quit();
  await stopAll();
});

/**
 * The secrets among `secrets` that `text` holds as values of their own: a PIN or code stored anywhere shows
 * as a token of its own (between characters that are not letters or digits). Ids that happen to contain the same
 * digits do not count: timestamps, session ids and uuids hold every run of four digits sooner or later.
 */
function secretsIn(text: string, secrets: string[]): string[] {
  const plain = text.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, 'uuid');
  return secrets.filter((secret) =>
    secret === 'scrypt' ? plain.includes('scrypt') : new RegExp(`(?<![0-9A-Za-z])${secret}(?![0-9A-Za-z])`).test(plain),
  );
}

/** Everything Redis holds, as text: every key with its value, whatever its type. */
async function everythingInRedis(): Promise<string> {
  const out: string[] = [];
  for (const key of await redis.keys('*')) {
    const type = await redis.type(key);
    const value =
      type === 'string'
        ? await redis.get(key)
        : type === 'hash'
          ? await redis.hgetall(key)
          : type === 'list'
            ? await redis.lrange(key, 0, -1)
            : type === 'set'
              ? await redis.smembers(key)
              : type === 'zset'
                ? await redis.zrange(key, 0, -1, 'WITHSCORES')
                : type === 'stream'
                  ? await redis.xrange(key, '-', '+')
                  : null;
    out.push(`${key} ${JSON.stringify(value)}`);
  }
  return out.join('\n');
}

/** Everything the journal holds about people, as text. */
async function journalText(): Promise<string> {
  const { Client } = await import('pg');
  const client = new Client({ connectionString: database.url });
  await client.connect();
  try {
    const rows = await client.query('select * from operation_events');
    return JSON.stringify(rows.rows);
  } finally {
    await client.end();
  }
}

/** The number of a menu entry on a USSD screen (`4. Change PIN` gives `4`). */
function entry(screen: string, label: string): string {
  const number = new RegExp(`(\\d+)\\. ${label}`).exec(screen)?.[1];
  if (!number) throw new Error(`no "${label}" on: ${screen}`);
  return number;
}

const personJson = async (id: string) => {
  const res = await fetch(`${app.url}/ops/people.json`, { headers: { authorization: `Bearer ${OPS_TOKEN}` } });
  const json = (await res.json()) as {
    persons: Array<{ id: string; pin: string; identities: Array<{ channel: string; userId: string }> }>;
  };
  return json.persons.find((p) => p.id === id)!;
};

/** An operator resets the person's PIN on the People page: the one-time code texted to the person's phone. */
async function resetPin(id: string): Promise<string> {
  const { cookie, csrf } = await signIn(app.url, OPS.user, OPS.password);
  const res = await postForm(app.url, `/ops/people/${id}/reset-pin`, { csrf }, { cookie });
  expect(res.status).toBe(200);
  const answer = await res.text();
  expect(answer).toMatch(/code sent to \+256 70… 00\d by SMS/);
  const phone = (await personJson(id)).identities.find((i) => i.channel === 'ussd')!.userId;
  const code = await codeTextedTo(app.url, phone, PIN_CODE_TEXT);
  expect(answer).not.toContain(code);
  return code;
}

describe('Change PIN', () => {
  it('asks the current PIN, refuses a weak new PIN with its reason, and takes the new PIN typed twice', async () => {
    const at = new AtSession(app.url, AMINA);
    const menu = await at.dial();
    expect(await at.answer(entry(menu, 'Change PIN'))).toMatch(/current PIN/);
    expect(await at.answer('0000')).toMatch(/Wrong PIN\. 2 attempts left/);
    expect(await at.answer('4821')).toMatch(/Choose a new PIN/);
    expect(await at.answer('123')).toMatch(/A PIN is 4 to 6 digits/);
    expect(await at.answer('1111')).toMatch(/one digit repeated/);
    expect(await at.answer('9876')).toMatch(/a run like 1234 or 9876/);
    expect(await at.answer('5001')).toMatch(/end of your phone number/);
    expect(await at.answer('2580')).toMatch(/a line or a sequence like 2580/);
    expect(await at.answer('4821')).toMatch(/differ from your current PIN/);
    expect(await at.answer('5930')).toMatch(/new PIN again/);
    expect(await at.answer('5931')).toMatch(/not the same.*Choose your new PIN again/s);
    expect(await at.answer('5930')).toMatch(/new PIN again/);
    expect(await at.answer('5930')).toMatch(/^END Your PIN is changed/);
    for (const screen of at.screens) expect(screen.length).toBeLessThanOrEqual(186);

    // The old PIN no longer opens a change; the new one does.
    const again = new AtSession(app.url, AMINA);
    await again.answer(entry(await again.dial(), 'Change PIN'));
    expect(await again.answer('4821')).toMatch(/Wrong PIN/);
    expect(await again.answer('5930')).toMatch(/Choose a new PIN/);

    const kept = await everythingInRedis();
    expect(secretsIn(kept, ['4821', '5930', '5931', '9876', 'scrypt'])).toEqual([]);
    const journal = await journalText();
    expect(journal).toMatch(/PIN changed/);
    expect(journal).not.toMatch(/5930|scrypt/);
  });
});

describe('a PIN reset by an operator', () => {
  it('is set from the one-time code at the next dial before anything else; until then nothing is paid', async () => {
    const older = await resetPin('brian');
    const code = await resetPin('brian');
    expect((await personJson('brian')).pin).toBe('must change');

    // Before any menu: the code. Going back reaches the menu, where paying is refused.
    const first = new AtSession(app.url, BRIAN);
    expect(await first.dial()).toMatch(/^CON Your PIN was reset\. Enter the one-time code/);
    const menu = await first.answer('0');
    expect(menu).toMatch(/Pay someone/);
    let screen = await first.answer('1');
    for (const answer of ['1', '0772000001', 'Sarah', 'Nakato', '5000', '1']) {
      if (/not allowed/.test(screen)) break;
      screen = await first.answer(answer);
    }
    // Refused as soon as the amount is known, before any PIN is asked or anything sent.
    expect(screen, first.screens.join('\n---\n')).toMatch(/You are not allowed to do this/);
    expect(first.screens.join('\n')).not.toMatch(/PIN to confirm|Sent/);

    // A dial string's answers are for the menu: they stop at the code and are not taken as one.
    const typedAhead = await new AtSession(app.url, BRIAN).answer('1*2');
    expect(typedAhead).toMatch(/^CON Your PIN was reset\. Enter the one-time code/);
    expect(typedAhead).not.toMatch(/not right/);

    // The next dial asks the code again: an older code and a wrong one are refused, the right one works.
    const second = new AtSession(app.url, BRIAN);
    expect(await second.dial()).toMatch(/one-time code/);
    expect(await second.answer(older)).toMatch(/code is not right/);
    expect(await second.answer(code)).toMatch(/Choose a new PIN/);
    expect(await second.answer('4444')).toMatch(/one digit repeated/);
    expect(await second.answer('7391')).toMatch(/new PIN again/);
    expect(await second.answer('7391')).toMatch(/^END Your new PIN is set/);
    expect((await personJson('brian')).pin).toBe('set');

    // Now the menu comes first, and the used code opens nothing after another reset.
    expect(await new AtSession(app.url, BRIAN).dial()).toMatch(/Pay someone/);
    await resetPin('brian');
    const third = new AtSession(app.url, BRIAN);
    await third.dial();
    expect(await third.answer(code)).toMatch(/code is not right/);

    const kept = await everythingInRedis();
    expect(secretsIn(kept, [code, older])).toEqual([]);
    expect(secretsIn(kept, ['7391', 'scrypt'])).toEqual([]);
    const journal = await journalText();
    expect(journal).toMatch(/PIN set with a one-time code/);
    expect(journal).not.toContain(code);
    expect(journal).not.toMatch(/7391|scrypt/);
  });
});

describe('Link a chat app', () => {
  it('shows a link code on USSD once; /link CODE on Telegram adds that account to the person', async () => {
    const at = new AtSession(app.url, AMINA);
    let menu = await at.dial();
    // The change of PIN left open above is offered first: start over.
    if (/Continue where you left off/.test(menu)) menu = await at.answer('2');
    const shown = await at.answer(entry(menu, 'Link a chat app'));
    const code = /link code: ([A-Z2-9]{10})/.exec(shown)?.[1];
    expect(code, shown).toBeTruthy();
    expect(shown).toMatch(/^END /);
    // A resend of that hop does not show it again: nothing keeps it.
    expect(await at.resend()).not.toContain(code!);
    expect(await everythingInRedis()).not.toContain(code!);

    const say = async (updateId: number, text: string) => {
      const sent = bot.of('sendMessage').length;
      bot.pushUpdate(textUpdate(updateId, text));
      await bot.waitForCalls('sendMessage', sent + 1);
      return String(bot.of('sendMessage').at(-1)!.text);
    };
    expect(await say(1, `/link ${code}`)).toMatch(/^Linked: this Telegram account is now amina's/);
    expect((await personJson('amina')).identities).toContainEqual({
      channel: 'telegram',
      userId: String(TELEGRAM_USER),
    });
    // Used: the same answer as any wrong code.
    expect(await say(2, `/link ${code}`)).toMatch(/That code did not work/);
    expect(await journalText()).not.toContain(code!);

    // Reset: the chat never asks the code or a PIN (its history would keep them); the next dial does.
    const reset = await resetPin('amina');
    expect(await say(3, '/pay')).not.toMatch(/code|PIN/);
    expect(await say(4, '/start')).not.toMatch(/Change PIN|Link a chat app/);
    const dial = new AtSession(app.url, AMINA);
    expect(await dial.dial()).toMatch(/^CON Your PIN was reset\. Enter the one-time code/);
    expect(await dial.answer(reset)).toMatch(/Choose a new PIN/);
    expect(await dial.answer('2749')).toMatch(/new PIN again/);
    expect(await dial.answer('2749')).toMatch(/Your new PIN is set/);
    expect((await personJson('amina')).pin).toBe('set');
    expect(secretsIn(await everythingInRedis(), [reset, '2749'])).toEqual([]);
  });

  it('makes at most 5 link codes per person in 15 minutes, then says so', async () => {
    const made: string[] = [];
    for (let i = 0; i < 6; i += 1) {
      const at = new AtSession(app.url, AMINA);
      made.push(await at.answer(entry(await at.dial(), 'Link a chat app')));
    }
    // One code was made in the test above: four more, then refused.
    expect(made.slice(0, 4).every((screen) => /link code: [A-Z2-9]{10}/.test(screen))).toBe(true);
    expect(made.slice(4)).toEqual([
      'END Too many codes made. Try again in 15 minutes.',
      'END Too many codes made. Try again in 15 minutes.',
    ]);
  });
});
