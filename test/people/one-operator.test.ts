/**
 * What one operator alone cannot do, from outside over real HTTP (OPS_DUAL_CONTROL=all, PostgreSQL, the demo's
 * SMS outbox as the person's phone, Telegram by long polling against a local Bot API server):
 * - each change issue #48 names (a PIN reset, a link code, a role change, a limit change, a new identity on a
 *   person, a new person, a new operator) waits: the asker's request does not take effect, the asker's own
 *   approval is refused, a second operator's approval makes it take effect;
 * - a one-time code or link code goes to the person's phone by SMS and appears in no operator response (pages,
 *   people.json), so a lone operator cannot link their own chat account to someone else;
 * - a lone operator cannot build a maker and a checker (two persons on two Slack ids, or a role change, or a
 *   link code to a checker): every step needs a second operator.
 */
import { spawn } from 'node:child_process';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningApp } from '../../src/app.js';
import { hashPin } from '../../src/conversation/calls/access-policy.js';
import type { Database } from '../../src/journal/database.js';
import { createLogger } from '../../src/log.js';
import { askToAddOperator, commandLineAsker, parseOperatorArgs } from '../../src/people/operator-cli.js';
import type { PeopleSchema } from '../../src/people/schema.js';
import { BOT_TOKEN, startFakeBotApi, type FakeBotApi } from '../adapters/telegram/fake-bot-api.js';
import { textUpdate, USER as TELEGRAM_USER } from '../adapters/telegram/harness.js';
import { codeTextedTo, LINK_CODE_TEXT, PIN_CODE_TEXT, postForm, postSignIn, signIn } from './ops-session.js';
import { LEAD, SECOND, startWithTwoOperators, type TwoOperators } from './two-operators.js';
import { productArgs, ROOT } from '../product.js';

const OPS_TOKEN = 'ops-token-0123456789abcdef';
const TESS = '+256700666001';
const FRED = '+256700666002';
/** The operator's own Telegram account. */
const OPERATOR_TELEGRAM = 777000111;
const POLICY = {
  roles: {
    teller: {
      flows: ['pay', 'check'],
      perPaymentLimit: { UGX: '500000' },
      dailyLimit: { UGX: '2000000' },
      approvalAbove: { UGX: '100000' },
    },
    // The same powers with larger limits: a limit is changed by giving a person another role.
    senior: { flows: ['pay', 'check'], perPaymentLimit: { UGX: '5000000' }, dailyLimit: { UGX: '20000000' } },
    finance: { flows: ['check'], perPaymentLimit: {}, dailyLimit: {}, approve: true },
  },
  users: {
    ussd: {
      [TESS]: { role: 'teller', person: 'tess', pin: hashPin('4821') },
      [FRED]: { role: 'finance', person: 'fred', pin: hashPin('4821') },
    },
    slack: {},
    telegram: {},
    whatsapp: {},
  },
};

let ops: TwoOperators;
let direct: Database;
let bot: FakeBotApi;
let app: RunningApp;
beforeAll(async () => {
  bot = await startFakeBotApi();
  ops = await startWithTwoOperators(
    'one_operator',
    {
      OPS_TOKEN,
      TELEGRAM_BOT_TOKEN: BOT_TOKEN,
      TELEGRAM_API_ROOT: bot.apiRoot,
      ACCESS_POLICY: JSON.stringify(POLICY),
    },
    { app: { logger: createLogger('silent') } },
  );
  ({ app, direct } = ops);
});
afterAll(async () => {
  await ops?.stop();
  await bot?.close();
});

interface PeopleJson {
  persons: Array<{ id: string; name: string; role: string; pin: string; identities: Array<{ channel: string }> }>;
  operators: Array<{ name: string; status: string }>;
}
/** Every answer an operator was given, to search for codes. */
const seen: string[] = [];
const keep = async (res: Response): Promise<{ status: number; text: string }> => {
  const text = await res.text();
  seen.push(text);
  return { status: res.status, text };
};
const peopleJson = async (): Promise<PeopleJson> => {
  const { text } = await keep(
    await fetch(`${app.url}/ops/people.json`, { headers: { authorization: `Bearer ${OPS_TOKEN}` } }),
  );
  return JSON.parse(text) as PeopleJson;
};
const person = async (id: string) => (await peopleJson()).persons.find((p) => p.id === id);
const post = async (who: { cookie: string; csrf: string }, path: string, fields: Record<string, string> = {}) =>
  keep(await postForm(app.url, path, { csrf: who.csrf, ...fields }, { cookie: who.cookie }));
const texts = async (phone: string): Promise<string[]> =>
  (
    (await (await fetch(`${app.url}/simulator/sms?phone=${encodeURIComponent(phone)}`)).json()) as {
      messages: Array<{ text: string }>;
    }
  ).messages.map((m) => m.text);
/** A message from a Telegram account (the harness's, Fred's once linked; or another's); the bot's answer. */
let updateId = 0;
const sayOnTelegram = async (text: string, from = TELEGRAM_USER): Promise<string> => {
  const sent = bot.of('sendMessage').length;
  const update = textUpdate((updateId += 1), text, from);
  bot.pushUpdate({ ...update, message: { ...update.message!, from: { ...update.message!.from!, id: from } } });
  await bot.waitForCalls('sendMessage', sent + 1);
  return String(bot.of('sendMessage').at(-1)!.text);
};

/** One change under dual control: how it is asked, and whether it took effect. */
interface Row {
  change: string;
  path: string;
  fields?: Record<string, string>;
  /** Whether the change took effect (false before the second operator's approval). */
  done(): Promise<boolean>;
}
const ROWS: Row[] = [
  {
    change: 'a PIN reset',
    path: '/ops/people/tess/reset-pin',
    done: async () => (await person('tess'))?.pin === 'must change' && (await texts(TESS)).length > 0,
  },
  {
    change: 'a link code',
    path: '/ops/people/fred/link-code',
    done: async () => (await texts(FRED)).some((t) => LINK_CODE_TEXT.test(t)),
  },
  {
    change: 'a role change',
    path: '/ops/people/fred/role',
    fields: { role: 'teller' },
    done: async () => (await person('fred'))?.role === 'teller',
  },
  {
    change: "a limit change (the person's role, whose limits they are)",
    path: '/ops/people/tess/role',
    fields: { role: 'senior' },
    done: async () => (await person('tess'))?.role === 'senior',
  },
  {
    change: 'a new person with identities',
    path: '/ops/people',
    fields: { name: 'New Nia', role: 'teller', ussd: '+256700666003', slack: 'UNIA' },
    done: async () => (await peopleJson()).persons.some((p) => p.name === 'New Nia'),
  },
  {
    change: 'a new operator',
    path: '/ops/operators',
    fields: { name: 'cleo', password: 'cleo has a long passphrase' },
    done: async () => (await peopleJson()).operators.some((o) => o.name === 'cleo'),
  },
];

describe("each change waits for a second operator's approval", () => {
  it.each(ROWS)('$change', async (row) => {
    const lead = await signIn(app.url, LEAD.name, LEAD.password);
    const asked = await post(lead, row.path, row.fields);
    expect(asked.status, asked.text).toBe(202);
    const id = /request <code>(r-[\w-]+)<\/code>/.exec(asked.text)?.[1];
    expect(id).toBeTruthy();
    expect(await row.done()).toBe(false);

    const own = await post(lead, `/ops/requests/${id}/approve`);
    expect(own.status).toBe(403);
    expect(own.text).toMatch(/nobody approves their own request/);
    expect(await row.done()).toBe(false);

    const bo = await signIn(app.url, SECOND.name, SECOND.password);
    const approved = await post(bo, `/ops/requests/${id}/approve`);
    expect(approved.status, approved.text).toBeLessThan(400);
    expect(await row.done()).toBe(true);
  });

  it('a new identity on a person: the approved link code reaches the person, who links their account', async () => {
    // The link code of the table's second row was texted to Fred; Fred sends it from his Telegram account.
    const code = await codeTextedTo(app.url, FRED, LINK_CODE_TEXT);
    expect(await sayOnTelegram(`/link ${code}`)).toMatch(/now fred's/);
    expect((await person('fred'))?.identities).toContainEqual({ channel: 'telegram', userId: String(TELEGRAM_USER) });
  });
});

describe('one-time codes go to the person, never to an operator', () => {
  it('the reset and link codes texted are in no answer an operator was given', async () => {
    const pin = await codeTextedTo(app.url, TESS, PIN_CODE_TEXT);
    const link = await codeTextedTo(app.url, FRED, LINK_CODE_TEXT);
    const bo = await signIn(app.url, SECOND.name, SECOND.password);
    for (const path of ['/ops/people', '/ops/people/tess', '/ops/people/fred'])
      await keep(await fetch(`${app.url}${path}`, { headers: { cookie: bo.cookie } }));
    await peopleJson();
    const all = seen.join('\n');
    expect(all).toMatch(/code sent to \+256 70… 001 by SMS/);
    expect(all).toMatch(/code sent to \+256 70… 002 by SMS/);
    for (const code of [pin, link]) expect(all).not.toContain(code);
    // The numbers themselves are shown only where the person's identities are listed, never in the code's line.
    expect(all).not.toMatch(/code sent to \+2567006660/);
  });

  it('every request, approval and refusal of an approval is in the audit; no code is', async () => {
    const pin = await codeTextedTo(app.url, TESS, PIN_CODE_TEXT);
    const link = await codeTextedTo(app.url, FRED, LINK_CODE_TEXT);
    const rows = (await direct.db
      .selectFrom('operator_audit' as never)
      .select(['actor', 'action', 'detail'] as never[])
      .execute()) as unknown as Array<{ actor: string; action: string; detail: Record<string, unknown> }>;
    const of = (actor: string, action: string) =>
      rows.filter((r) => r.actor === actor && r.action === action).map((r) => r.detail.change);
    const changes = ['reset-pin', 'link-code', 'role', 'role', 'add-person', 'add-operator'];
    expect(of(LEAD.name, 'request.made')).toEqual(expect.arrayContaining(changes));
    expect(of(SECOND.name, 'request.approved')).toEqual(expect.arrayContaining(changes));
    // The asker's own approvals were refused: none recorded as approved by them.
    expect(of(LEAD.name, 'request.approved')).toEqual([]);
    const text = JSON.stringify(rows);
    for (const code of [pin, link]) expect(text).not.toContain(code);
    expect(text).not.toMatch(/passphrase|scrypt/);
  });

  it('a person without a number gets no code: the request is refused, nothing is shown', async () => {
    const lead = await signIn(app.url, LEAD.name, LEAD.password);
    const bo = await signIn(app.url, SECOND.name, SECOND.password);
    const asked = await post(lead, '/ops/people', { name: 'Slack Sam', role: 'finance', slack: 'USAM' });
    const id = /request <code>(r-[\w-]+)<\/code>/.exec(asked.text)?.[1];
    expect((await post(bo, `/ops/requests/${id}/approve`)).status).toBe(303);
    const sam = (await peopleJson()).persons.find((p) => p.name === 'Slack Sam')!;
    for (const change of ['reset-pin', 'link-code']) {
      const refused = await post(lead, `/ops/people/${sam.id}/${change}`);
      expect(refused.status).toBe(409);
      expect(refused.text).toMatch(/no phone number .* a code is never shown here/);
    }
  });
});

describe('a lone operator cannot build a maker and a checker, nor spend as someone else', () => {
  it('every step needs a second operator; the link code goes to the checker, not to the operator', async () => {
    const lead = await signIn(app.url, LEAD.name, LEAD.password);
    const before = await peopleJson();
    // Two persons for one human: a teller on one Slack id, a finance person on another.
    const teller = await post(lead, '/ops/people', { name: 'Me Teller', role: 'teller', slack: 'UMET' });
    const finance = await post(lead, '/ops/people', { name: 'Me Finance', role: 'finance', slack: 'UMEF' });
    // An existing teller made a checker too.
    const role = await post(lead, '/ops/people/tess/role', { role: 'finance' });
    // A link code for another person, to link the operator's own chat account to them.
    const link = await post(lead, '/ops/people/fred/link-code');
    const fredTexts = (await texts(FRED)).length;
    for (const asked of [teller, finance, role, link]) {
      expect(asked.status).toBe(202);
      const id = /request <code>(r-[\w-]+)<\/code>/.exec(asked.text)![1]!;
      const own = await post(lead, `/ops/requests/${id}/approve`);
      expect(own.status).toBe(403);
    }
    // Nothing took effect: no new person, no role changed, no code made.
    const after = await peopleJson();
    expect(after.persons.map((p) => [p.id, p.role, p.identities.length])).toEqual(
      before.persons.map((p) => [p.id, p.role, p.identities.length]),
    );
    expect((await texts(FRED)).length).toBe(fredTexts);
    // The operator's own Telegram account guessing a code links nothing (and no code was shown to guess from).
    const fredIds = (await person('fred'))!.identities.length;
    expect(await sayOnTelegram('/link ABCDEFGH23', OPERATOR_TELEGRAM)).toMatch(/That code did not work/);
    expect((await person('fred'))!.identities.length).toBe(fredIds);
    expect(JSON.stringify(await peopleJson())).not.toContain(String(OPERATOR_TELEGRAM));
  });
});

describe('the second operator, from the command line', () => {
  const run = (args: string[], stdin: string) =>
    new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
      const child = spawn(process.execPath, [...productArgs('src/people/operator-cli'), ...args], {
        cwd: ROOT,
        env: { ...process.env, DATABASE_URL: ops.database.url, LOG_LEVEL: 'silent' },
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      child.on('close', (code) => resolve({ code, out, err }));
      child.stdin.end(stdin);
    });

  // Two processes of npx tsx on a loaded machine: the test's own bound.
  it('npm run operator -- add writes a request that takes effect only once an operator approves it', async () => {
    expect(parseOperatorArgs(['add'])).toEqual({ error: expect.stringMatching(/needs the new operator's name/) });
    expect(parseOperatorArgs(['add', 'dana', 'secret'])).toEqual({ error: expect.stringMatching(/one name only/) });
    expect(parseOperatorArgs(['remove', 'dana'])).toEqual({ error: expect.stringMatching(/unknown command/) });
    expect(parseOperatorArgs(['add', 'dana'])).toEqual({ add: 'dana' });

    const db = direct.db as unknown as Kysely<PeopleSchema>;
    const by = commandLineAsker();
    await expect(askToAddOperator(db, { name: 'dana', password: 'aaaaaaaaaaaa', by })).rejects.toMatchObject({
      status: 400,
    });
    const asked = await run(['add', 'dana'], 'dana has a long passphrase\n');
    expect(asked.code, asked.err).toBe(0);
    const id = /^asked: add operator dana \(request (r-[\w-]+)\)/.exec(asked.out)?.[1];
    expect(id, asked.out).toBeTruthy();
    expect(asked.out + asked.err).not.toContain('dana has a long passphrase');

    // Asked, not added: dana cannot sign in; the request waits for an operator, asked by the command line.
    expect((await postSignIn(app.url, 'dana', 'dana has a long passphrase')).status).toBe(401);
    const pending = (
      (await (
        await fetch(`${app.url}/ops/people.json`, { headers: { authorization: `Bearer ${OPS_TOKEN}` } })
      ).json()) as { requests: { pending: Array<{ id: string; askedBy: string; action: string }> } }
    ).requests.pending.find((r) => r.id === id);
    expect(pending).toMatchObject({ action: 'add-operator', askedBy: expect.stringMatching(/^command line \(/) });

    // The first operator approves it: dana is an operator, added by them.
    const lead = await signIn(app.url, LEAD.name, LEAD.password);
    expect((await post(lead, `/ops/requests/${id}/approve`)).status).toBe(303);
    await signIn(app.url, 'dana', 'dana has a long passphrase');
    // A name taken is refused.
    await expect(askToAddOperator(db, { name: 'dana', password: 'dana has another passphrase', by })).rejects.toThrow(
      /there is already an operator dana/,
    );
    // The command's own refusal: exit 2 on bad arguments, before anything is read or written.
    const bad = await run(['add'], '');
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/^operator: add needs the new operator's name/);
  }, 120_000);
});
