/**
 * Linking a chat account with a link code sent to the bot (`/link CODE`, `link CODE`, `/momo link CODE`), on
 * PostgreSQL and PGlite: the identity joins the person and the policy knows it at once; a code works once; a
 * wrong code and a used one get the same answer; guessing is stopped per source after a few tries, and nothing
 * else reaches the engine's flows. Guesses at one code are counted on the code, in the database: accounts
 * guessing in turn get no more tries at it than one.
 */
import { expect, it } from 'vitest';
import type { Kysely } from 'kysely';
import { AccessPolicy, hashPin, peopleOfPolicy } from '../../src/conversation/calls/access-policy.js';
import type { Engine, Inbound } from '../../src/conversation/types.js';
import { createLogger } from '../../src/log.js';
import { LINK_TOO_MANY, LINK_TRIES, LINK_WRONG, linkCodeOf, withLinkCommand } from '../../src/people/link.js';
import { Operators } from '../../src/people/operators.js';
import { OperatorRequests } from '../../src/people/requests.js';
import { DatabaseLimits } from '../../src/people/limits.js';
import { LINK_CODE_TRIES, People } from '../../src/people/people.js';
import type { PeopleSchema } from '../../src/people/schema.js';
import type { PeopleDirectory } from '../../src/people/start.js';
import { PeopleSync } from '../../src/people/sync.js';
import { forEachDatabase } from '../journal/databases.js';

const POLICY = {
  roles: { teller: { flows: ['pay'], perPaymentLimit: { UGX: '1000' }, dailyLimit: { UGX: '1000' } } },
  users: {
    ussd: { '+256700444001': { role: 'teller', person: 'amina', pin: hashPin('4821') } },
    telegram: {},
    slack: {},
    whatsapp: {},
  },
};

it('reads the link command of each chat, and nothing else', () => {
  expect(linkCodeOf({ channel: 'telegram', text: 'link ABCD2345EF' })).toBe('ABCD2345EF');
  expect(linkCodeOf({ channel: 'whatsapp', text: ' LINK abcd2345ef ' })).toBe('abcd2345ef');
  expect(linkCodeOf({ channel: 'slack', text: 'link ABCD-2345-EF' })).toBe('ABCD-2345-EF');
  expect(linkCodeOf({ channel: 'ussd', text: 'link ABCD2345EF' })).toBeUndefined();
  expect(linkCodeOf({ channel: 'telegram', text: 'pay 500 to link' })).toBeUndefined();
});

forEachDatabase('people-link', (open) => {
  it('links a chat account once; a guessed code says nothing, and guessing stops after a few tries', async () => {
    const db = (await open()).db as unknown as Kysely<PeopleSchema>;
    const people = new People(db);
    const limits = new DatabaseLimits(db);
    const policy = new AccessPolicy(POLICY);
    await people.importPolicy(peopleOfPolicy(policy.document));
    const sync = new PeopleSync({ people, policy, logger: createLogger('silent') });
    await sync.refresh(true);
    const directory: PeopleDirectory = {
      open: async () => ({ people, operators: new Operators(db), limits, requests: new OperatorRequests(db) }),
      operators: async () => null,
      changed: () => sync.refresh(),
      readOnly: null,
      close: async () => {},
    };
    const seen: Inbound[] = [];
    const engine: Engine = { handle: async (inbound) => (seen.push(inbound), { text: 'menu', final: false }) };
    withLinkCommand(engine, { directory, logger: createLogger('silent') });
    const say = async (channel: Inbound['channel'], userId: string, text: string) =>
      (await engine.handle({ channel, conversationId: userId, userId, messageId: `${Math.random()}`, text })).text;

    const code = await people.linkCode('amina');
    expect(policy.personOf('telegram', '5001')).toBeUndefined();
    expect(await say('telegram', '5001', `link ${code}`)).toMatch(/^Linked: this Telegram account is now amina's/);
    expect(policy.personOf('telegram', '5001')).toBe('amina');
    // Used: the same answer as a code that never existed.
    expect(await say('whatsapp', '256700444009', `link ${code}`)).toBe(LINK_WRONG);
    expect(await say('whatsapp', '256700444009', 'link ZZZZZZZZZZ')).toBe(LINK_WRONG);
    for (let i = 2; i < LINK_TRIES; i += 1)
      expect(await say('whatsapp', '256700444009', `link GUESS${i}XYZ`)).toBe(LINK_WRONG);
    // Past the limit even the right code is not looked up.
    const fresh = await people.linkCode('amina');
    expect(await say('whatsapp', '256700444009', `link ${fresh}`)).toBe(LINK_TOO_MANY);
    expect(policy.personOf('whatsapp', '256700444009')).toBeUndefined();
    // Another account is not held back; other messages go to the engine.
    expect(await say('slack', 'UAMINA', `link ${fresh}`)).toMatch(/^Linked: this Slack account/);
    expect(await say('slack', 'UAMINA', 'pay')).toBe('menu');
    expect(seen.map((s) => s.text)).toEqual(['pay']);
    expect((await people.history('amina')).filter((h) => h.action === 'identity linked')).toHaveLength(2);
  });

  it('counts guesses at one code whichever accounts make them: three accounts in turn get no more tries', async () => {
    const db = (await open()).db as unknown as Kysely<PeopleSchema>;
    const people = new People(db);
    const limits = new DatabaseLimits(db);
    const policy = new AccessPolicy(POLICY);
    await people.importPolicy(peopleOfPolicy(policy.document));
    const sync = new PeopleSync({ people, policy, logger: createLogger('silent') });
    await sync.refresh(true);
    const directory: PeopleDirectory = {
      open: async () => ({ people, operators: new Operators(db), limits, requests: new OperatorRequests(db) }),
      operators: async () => null,
      changed: () => sync.refresh(),
      readOnly: null,
      close: async () => {},
    };
    const engine: Engine = { handle: async () => ({ text: 'menu', final: false }) };
    withLinkCommand(engine, { directory, logger: createLogger('silent') });
    const say = async (userId: string, text: string) =>
      (
        await engine.handle({
          channel: 'telegram',
          conversationId: userId,
          userId,
          messageId: `${Math.random()}`,
          text,
        })
      ).text;

    const code = await people.linkCode('amina');
    // Wrong guesses at this code (its first characters, another rest), three accounts in turn, each within its
    // own limit of tries: together no more than the code's.
    const accounts = ['7001', '7002', '7003'];
    // (`O` is in no code: the rest is always wrong.)
    const wrong = (i: number) => `${code.slice(0, 3)}WRONG9${i}`;
    for (let i = 0; i < LINK_CODE_TRIES; i += 1)
      expect(await say(accounts[i % 3]!, `link ${wrong(i)}`)).toBe(LINK_WRONG);
    expect(LINK_CODE_TRIES).toBeLessThan(3 * (LINK_TRIES - 1));
    // The code is used up: the right code from an account with tries left links nothing.
    expect(await say(accounts[2]!, `link ${code}`)).toBe(LINK_WRONG);
    expect(policy.personOf('telegram', '7003')).toBeUndefined();
    const row = await db
      .selectFrom('person_codes')
      .select(['wrong_tries', 'used_at'])
      .where('person_id', '=', 'amina')
      .where('purpose', '=', 'link')
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    expect(Number(row.wrong_tries)).toBe(LINK_CODE_TRIES);
    expect(row.used_at).not.toBeNull();
    // A guess that names no outstanding code counts on none; a new code starts at nothing and links.
    const next = await people.linkCode('amina');
    const other = next.startsWith('ZZZ') ? 'YYYYYYYYYY' : 'ZZZZZZZZZZ';
    expect(await say('7001', `link ${other}`)).toBe(LINK_WRONG);
    expect(await say('7004', `link ${next.toLowerCase()}`)).toMatch(/^Linked: this Telegram account is now amina's/);
  });
});
