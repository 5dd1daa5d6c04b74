/**
 * An operator's browser on /ops, for the tests: the sign-in form loaded (its cookie and CSRF token), posted,
 * and the session's cookie and CSRF token for the changes that follow.
 */
import type { BrowserContext } from 'playwright-core';
import { expect } from 'vitest';

/** A form post to the product, with extra headers (a cookie, an Origin). */
export const postForm = (
  url: string,
  path: string,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
) =>
  fetch(`${url}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(fields),
  });

/** The sign-in form as a browser loads it: its cookie and the CSRF token it carries. */
export async function signInForm(url: string): Promise<{ cookie: string; csrf: string }> {
  const res = await fetch(`${url}/ops/sign-in`);
  const setCookie = res.headers.get('set-cookie') ?? '';
  expect(setCookie).toMatch(/^momo_sign_in=[^;]+;.*HttpOnly/i);
  expect(setCookie).toMatch(/SameSite=Strict/i);
  const csrf = /name="csrf" value="([^"]+)"/.exec(await res.text())?.[1];
  expect(csrf).toBeTruthy();
  return { cookie: setCookie.split(';')[0]!, csrf: csrf! };
}

/** Posts the sign-in form loaded from this site. */
export async function postSignIn(url: string, name: string, password: string): Promise<Response> {
  const form = await signInForm(url);
  return postForm(url, '/ops/sign-in', { name, password, csrf: form.csrf }, { cookie: form.cookie });
}

/** A signed-in operator: the session cookie and the CSRF token of the pages. */
export async function signIn(url: string, name: string, password: string): Promise<{ cookie: string; csrf: string }> {
  const res = await postSignIn(url, name, password);
  expect(res.status).toBe(303);
  const setCookie = res.headers.getSetCookie().find((c) => c.startsWith('momo_ops=')) ?? '';
  expect(setCookie).toMatch(/HttpOnly/i);
  expect(setCookie).toMatch(/SameSite=Strict/i);
  const cookie = setCookie.split(';')[0]!;
  const page = await (await fetch(`${url}/ops/people`, { headers: { cookie } })).text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1];
  expect(csrf).toBeTruthy();
  return { cookie, csrf: csrf! };
}

/**
 * The latest one-time or link code texted to `phone` (the demo's SMS outbox, as the simulator's phone shows it):
 * where a code an operator asked for arrives, never on the operator's page.
 */
export async function codeTextedTo(url: string, phone: string, pattern: RegExp): Promise<string> {
  const res = await fetch(`${url}/simulator/sms?phone=${encodeURIComponent(phone)}`);
  const { messages } = (await res.json()) as { messages: Array<{ text: string }> };
  const code = messages
    .map((m) => pattern.exec(m.text)?.[1])
    .filter(Boolean)
    .at(-1);
  expect(code, `a code texted to ${phone}: ${JSON.stringify(messages)}`).toBeTruthy();
  return code!;
}

/** A PIN reset's one-time code in a text. */
export const PIN_CODE_TEXT = /one-time code is (\d{8})/;
/** A link code in a text. */
export const LINK_CODE_TEXT = /link code is ([A-Za-z0-9-]{8,})/;

/**
 * Signs `name` in on the sign-in form in Chromium, in `context` (its cookie then serves every page of it). Waits for
 * /ops itself to load: the sign-in page's own URL matches /ops too, and a page closed while its navigation commits
 * may never close (microsoft/playwright#42366).
 */
export async function signInPage(context: BrowserContext, url: string, name: string, password: string): Promise<void> {
  const page = await context.newPage();
  await page.goto(`${url}/ops/sign-in`);
  await page.fill('input[name=name]', name);
  await page.fill('input[name=password]', password);
  await Promise.all([page.waitForURL(`${url}/ops`, { waitUntil: 'load' }), page.click('button[type=submit]')]);
  await page.close();
}
