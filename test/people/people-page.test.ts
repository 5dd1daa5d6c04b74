/**
 * The People page over real HTTP, on a real PostgreSQL database, as operators and attackers would use it:
 * operators sign in by name and password (session cookie, sign-out); a form posted from another site, a
 * request without the CSRF token, and Basic-auth or OPS_TOKEN callers change nothing; a person added on the
 * page can dial at once; one suspended mid-conversation is refused at their next step; a PIN reset shows its
 * code once and the person cannot move money until they set a new one; every change is listed on the person
 * with the operator's name. Then the page in headless Chromium, with a screenshot (docs/people.png with
 * UPDATE_SCREENSHOTS: test/screenshots.ts).
 */
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type RunningApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { hashPin } from '../../src/conversation/calls/access-policy.js';
import { CHROMIUM_ARGS } from '../adapters/ussd/chromium.js';
import { AtSession } from '../e2e/helpers.js';
import { serverDatabase, type ServerDatabase } from '../journal/databases.js';
import { screenshotPath } from '../screenshots.js';
import {
  codeTextedTo,
  PIN_CODE_TEXT,
  postForm,
  postSignIn as opsPostSignIn,
  signIn as opsSignIn,
  signInForm as opsSignInForm,
} from './ops-session.js';

const USER = 'ops-lead';
const PASSWORD = 'a long operator password';
const OPS_TOKEN = 'ops-token-0123456789abcdef';
const POLICY = {
  roles: {
    teller: { flows: ['pay', 'request', 'check'], perPaymentLimit: { UGX: '500000' }, dailyLimit: { UGX: '2000000' } },
    viewer: { flows: ['check'], perPaymentLimit: {}, dailyLimit: {} },
  },
  users: {
    ussd: { '+256700333001': { role: 'teller', person: 'amina', pin: hashPin('4821') } },
    slack: { UAMINA: { role: 'teller', person: 'amina' } },
    telegram: {},
    whatsapp: {},
  },
};

let database: ServerDatabase;
let app: RunningApp;
beforeAll(async () => {
  database = await serverDatabase('people_page');
  app = await startApp(
    loadConfig({
      PORT: '0',
      LOG_LEVEL: 'silent',
      OPS_USER: USER,
      OPS_PASSWORD: PASSWORD,
      OPS_TOKEN,
      DATABASE_URL: database.url,
      ACCESS_POLICY: JSON.stringify(POLICY),
    }),
  );
});
afterAll(async () => {
  await app?.stop();
  await database?.drop();
});

const signIn = (name = USER, password = PASSWORD) => opsSignIn(app.url, name, password);
const postSignIn = (name: string, password: string) => opsPostSignIn(app.url, name, password);
const signInForm = () => opsSignInForm(app.url);
const post = (path: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
  postForm(app.url, path, fields, headers);

interface PeopleJson {
  persons: Array<{
    id: string;
    name: string;
    role: string;
    status: string;
    pin: string;
    identities: Array<{ channel: string; userId: string }>;
  }>;
}
const peopleJson = async (): Promise<PeopleJson> =>
  (
    await fetch(`${app.url}/ops/people.json`, { headers: { authorization: `Bearer ${OPS_TOKEN}` } })
  ).json() as Promise<PeopleJson>;

describe('the People page', () => {
  it('lists the imported policy, to an operator, a Basic reader and the OPS_TOKEN, and to nobody else', async () => {
    const json = await peopleJson();
    expect(json.persons.find((p) => p.id === 'amina')?.identities).toEqual([
      { channel: 'slack', userId: 'UAMINA' },
      { channel: 'ussd', userId: '+256700333001' },
    ]);
    expect((await fetch(`${app.url}/ops/people.json`)).status).toBe(401);
    expect((await fetch(`${app.url}/ops/people.json`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(
      401,
    );
    expect((await fetch(`${app.url}/ops/people`, { headers: { authorization: `Bearer ${OPS_TOKEN}` } })).status).toBe(
      401,
    );
    const basic = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;
    expect((await fetch(`${app.url}/ops/people.json`, { headers: { authorization: basic } })).status).toBe(200);
    const browser = await fetch(`${app.url}/ops/people`, { redirect: 'manual', headers: { accept: 'text/html' } });
    expect(browser.status).toBe(303);
    expect(browser.headers.get('location')).toBe('/ops/sign-in');
    expect((await postSignIn(USER, 'wrong')).status).toBe(401);
  });

  it("refuses a sign-in posted from another site, or without the form's CSRF token, with 403 and no session", async () => {
    const form = await signInForm();
    const right = { name: USER, password: PASSWORD };
    const refusals = [
      // Another site's form: the browser sends its Origin (SameSite=Strict keeps the form's cookie away anyway).
      await post(
        '/ops/sign-in',
        { ...right, csrf: form.csrf },
        { cookie: form.cookie, origin: 'https://evil.example' },
      ),
      // No form loaded here: no cookie, whatever token is made up.
      await post('/ops/sign-in', right),
      await post('/ops/sign-in', { ...right, csrf: form.csrf }),
      // The cookie without its token, or with another.
      await post('/ops/sign-in', right, { cookie: form.cookie }),
      await post('/ops/sign-in', { ...right, csrf: 'A'.repeat(32) }, { cookie: form.cookie }),
    ];
    for (const res of refusals) {
      expect(res.status).toBe(403);
      expect(res.headers.get('set-cookie') ?? '').not.toMatch(/momo_ops=/);
      expect(await res.text()).toMatch(/did not come from the form of this site/);
    }
    // The same form, posted from this site, signs in.
    const ok = await post('/ops/sign-in', { ...right, csrf: form.csrf }, { cookie: form.cookie, origin: app.url });
    expect(ok.status).toBe(303);
    expect(ok.headers.get('set-cookie') ?? '').toMatch(/momo_ops=/);
  });

  it('refuses a form posted from another site, or without the CSRF token, and changes nothing', async () => {
    const { cookie, csrf } = await signIn();
    const before = await peopleJson();
    const person = { name: 'Mallory', role: 'teller', ussd: '+256700333666' };
    // Another site's form: the browser sends its Origin (and, SameSite=Strict aside, the cookie).
    expect((await post('/ops/people', { ...person, csrf }, { cookie, origin: 'https://evil.example' })).status).toBe(
      403,
    );
    expect((await post('/ops/people', person, { cookie })).status).toBe(403);
    expect((await post('/ops/people', { ...person, csrf: 'guessed' }, { cookie })).status).toBe(403);
    expect((await post('/ops/people', { ...person, csrf })).status).toBe(403);
    const basic = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;
    expect((await post('/ops/people', { ...person, csrf }, { authorization: basic })).status).toBe(403);
    expect((await post('/ops/people/amina/suspend', { csrf }, { authorization: `Bearer ${OPS_TOKEN}` })).status).toBe(
      403,
    );
    expect(await peopleJson()).toEqual(before);
  });

  it('adds a person who can use the product at once, and refuses bad values with the reason', async () => {
    const { cookie, csrf } = await signIn();
    const bad = await post('/ops/people', { csrf, name: 'Bad', role: 'teller', ussd: '0772 not a number' }, { cookie });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('ussd: a phone number in + form');
    expect((await post('/ops/people', { csrf, name: 'Bad', role: 'boss', slack: 'UBAD' }, { cookie })).status).toBe(
      400,
    );
    expect(
      (await post('/ops/people', { csrf, name: 'Copy', role: 'teller', slack: 'UAMINA' }, { cookie })).status,
    ).toBe(409);
    const at = new AtSession(app.url, '+256700333777');
    expect(await at.dial()).toMatch(/not allowed/);
    const added = await post(
      '/ops/people',
      { csrf, name: 'Brian <b>', role: 'viewer', ussd: '+256700333777', telegram: '777' },
      { cookie },
    );
    expect(added.status).toBe(303);
    const brian = (await peopleJson()).persons.find((p) => p.name === 'Brian <b>')!;
    expect(brian).toMatchObject({ role: 'viewer', status: 'active', pin: 'none' });
    expect(await new AtSession(app.url, '+256700333777').dial()).not.toMatch(/not allowed/);
    const page = await (await fetch(`${app.url}/ops/people/${brian.id}`, { headers: { cookie } })).text();
    expect(page).toContain('Brian &lt;b&gt;');
    expect(page).toMatch(/added<\/strong> <span class="source">by operator:ops-lead/);
  });

  it('suspends a person mid-conversation: their next step is refused, on every channel; reactivated, they are back', async () => {
    const { cookie, csrf } = await signIn();
    const at = new AtSession(app.url, '+256700333001');
    const menu = await at.dial();
    expect(menu).toMatch(/^CON /);
    expect(menu).not.toMatch(/not allowed/);
    expect((await post('/ops/people/amina/suspend', { csrf }, { cookie })).status).toBe(303);
    expect(await at.answer('1')).toMatch(/not allowed/);
    expect(await new AtSession(app.url, '+256700333001').dial()).toMatch(/not allowed/);
    expect((await peopleJson()).persons.find((p) => p.id === 'amina')?.status).toBe('suspended');
    expect((await post('/ops/people/amina/reactivate', { csrf }, { cookie })).status).toBe(303);
    expect(await new AtSession(app.url, '+256700333001').dial()).not.toMatch(/not allowed/);
  });

  it('resets a PIN: the code goes to the person by SMS, never to the operator; the PIN must change', async () => {
    const { cookie, csrf } = await signIn();
    const res = await post('/ops/people/amina/reset-pin', { csrf }, { cookie });
    expect(res.status).toBe(200);
    const answer = await res.text();
    // The operator reads where it went, the number masked; the person's phone has the code.
    expect(answer).toContain('One-time code sent to +256 70… 001 by SMS');
    expect(answer).not.toContain('+256700333001');
    const code = await codeTextedTo(app.url, '+256700333001', PIN_CODE_TEXT);
    expect(answer).not.toContain(code);
    expect((await peopleJson()).persons.find((p) => p.id === 'amina')?.pin).toBe('must change');
    const person = await (await fetch(`${app.url}/ops/people/amina`, { headers: { cookie } })).text();
    expect(person).not.toContain(code!);
    expect(person).toMatch(/PIN reset<\/strong> <span class="source">by operator:ops-lead/);
    expect(JSON.stringify(await peopleJson())).not.toContain(code!);
  });

  it('shows a person locked by wrong one-time codes as locked, with when, why and how to unlock', async () => {
    const { cookie, csrf } = await signIn();
    expect((await post('/ops/people/amina/reset-pin', { csrf }, { cookie })).status).toBe(200);
    const dial = new AtSession(app.url, '+256700333001');
    expect(await dial.dial()).toMatch(/one-time code/);
    for (const wrong of ['00000001', '00000002', '00000003']) await dial.answer(wrong);
    const page = await (await fetch(`${app.url}/ops/people/amina`, { headers: { cookie } })).text();
    const pin = /<dd data-testid="pin">([\s\S]*?)<\/dd>/.exec(page)?.[1]?.replace(/\s+/g, ' ') ?? '';
    expect(pin).toMatch(/^ ?<span class="state state-failed" data-testid="locked">locked<\/span> until \d{4}-/);
    expect(pin).toContain('wrong one-time code');
    expect(pin).toMatch(
      /To unlock: Unlock PIN \(the one-time code they were given works again until it expires\) or Reset PIN/,
    );
    // Locked out of a one-time code, they have no PIN to change: not "must change".
    expect(pin).not.toMatch(/must change/i);
    expect(pin).toContain('No PIN yet');
    // Unlocked, it is no longer shown locked.
    expect((await post('/ops/people/amina/unlock-pin', { csrf }, { cookie })).status).toBeLessThan(400);
    const after = await (await fetch(`${app.url}/ops/people/amina`, { headers: { cookie } })).text();
    expect(after).not.toContain('data-testid="locked"');
  });

  it('adds an operator who signs in by name; sign-out ends the session', async () => {
    const { cookie, csrf } = await signIn();
    expect((await post('/ops/operators', { csrf, name: 'zawadi', password: 'short' }, { cookie })).status).toBe(400);
    expect((await post('/ops/operators', { csrf, name: 'zawadi', password: 'aaaaaaaaaaaa' }, { cookie })).status).toBe(
      400,
    );
    expect(
      (await post('/ops/operators', { csrf, name: 'zawadi', password: 'another long password' }, { cookie })).status,
    ).toBe(303);
    const zawadi = await signIn('zawadi', 'another long password');
    expect(
      (await post('/ops/people/amina/role', { csrf: zawadi.csrf, role: 'viewer' }, { cookie: zawadi.cookie })).status,
    ).toBe(303);
    const page = await (await fetch(`${app.url}/ops/people/amina`, { headers: { cookie } })).text();
    expect(page).toMatch(/role changed<\/strong> <span class="source">by operator:zawadi/);
    expect((await post('/ops/sign-out', { csrf: zawadi.csrf }, { cookie: zawadi.cookie })).status).toBe(303);
    expect((await fetch(`${app.url}/ops/people.json`, { headers: { cookie: zawadi.cookie } })).status).toBe(401);
    expect(
      (await post('/ops/people/amina/role', { csrf: zawadi.csrf, role: 'teller' }, { cookie: zawadi.cookie })).status,
    ).toBe(403);
  });
});

describe('the People page in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('signs in, adds a person, suspends them, and shows the changes', async () => {
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 1000 } })).newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${app.url}/ops/people`);
    expect(page.url()).toBe(`${app.url}/ops/sign-in`);
    await page.fill('input[name=name]', USER);
    await page.fill('input[name=password]', PASSWORD);
    await Promise.all([page.waitForURL(`${app.url}/ops`), page.click('button[type=submit]')]);
    await page.goto(`${app.url}/ops/people`);
    await page.fill('form.add-person input[name=name]', 'Chloe Achieng');
    await page.selectOption('form.add-person select[name=role]', 'teller');
    await page.fill('form.add-person input[name=ussd]', '+256700333888');
    await page.fill('form.add-person input[name=slack]', 'UCHLOE');
    await page.selectOption('form.add-person select[name=preferred]', 'slack');
    await Promise.all([page.waitForURL(/\/ops\/people\/p-/), page.click('form.add-person button[type=submit]')]);
    expect(await page.textContent('[data-testid=status]')).toBe('active');
    await Promise.all([page.waitForURL(/\/ops\/people\/p-/), page.click('form[action$="/suspend"] button')]);
    expect(await page.textContent('[data-testid=status]')).toBe('suspended');
    expect(await page.locator('ol.timeline li').count()).toBe(2);
    await page.goto(`${app.url}/ops/people`);
    expect(await page.locator('tr[data-person]').count()).toBeGreaterThanOrEqual(3);
    await page.screenshot({ path: screenshotPath('people.png'), fullPage: true });
    expect(errors).toEqual([]);
  });
});
