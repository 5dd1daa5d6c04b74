/**
 * `/preview` in the whole product (startApp with the embedded sandbox: the real engine, flows and renderers):
 * who may not post to it (no token, a wrong one, another site, bodies out of bounds), that its conversation is
 * its own, and the page in headless Chromium: a press in one pane and answers typed in others move the one
 * conversation, and all four panes show each new screen, with a screenshot (docs/preview.png with
 * UPDATE_SCREENSHOTS: test/screenshots.ts).
 * That production serves none of it: test/security/ussd-gateway.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import { PREVIEW_COOKIE, previewParticipant } from '../../../adapters/preview/index.js';
import { startApp, type RunningApp } from '../../../src/app.js';
import { loadConfig } from '../../../src/config.js';
import { keys } from '../../../src/store/keys.js';
import type { Prompt } from '../../../src/conversation/types.js';
import { screenshotPath } from '../../screenshots.js';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../ussd/chromium.js';
import { productDatabase } from '../../journal/server-database.js';

let running: RunningApp;
beforeAll(async () => {
  running = await startApp(loadConfig({ ...(await productDatabase()), PORT: '0', LOG_LEVEL: 'silent' }));
});
afterAll(async () => {
  await running?.stop();
});

/** The page's cookie and token, as a browser holds them after `GET /preview`. */
async function openPage(): Promise<{ cookie: string; token: string; html: string; res: Response }> {
  const res = await fetch(`${running.url}/preview`);
  const html = await res.text();
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0]!;
  const token = /<meta name="csrf" content="([^"]+)">/.exec(html)?.[1] ?? '';
  return { cookie, token, html, res };
}

function turn(body: unknown, headers: Record<string, string>) {
  return fetch(`${running.url}/preview/turn`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

const stored = (phone: string) => running.store.get(keys.conversation(previewParticipant(phone)));

describe('/preview: who may not', () => {
  it('serves the page with its token in an HttpOnly, SameSite=Strict cookie, and only its own files', async () => {
    const { res, html, cookie, token } = await openPage();
    expect(res.status).toBe(200);
    expect(res.headers.get('set-cookie')).toMatch(/HttpOnly/);
    expect(res.headers.get('set-cookie')).toMatch(/SameSite=Strict/);
    expect(res.headers.get('set-cookie')).toMatch(/Path=\/preview/);
    expect(cookie).toBe(`${PREVIEW_COOKIE}=${token}`);
    expect(res.headers.get('content-security-policy')).toMatch(/script-src 'self'/);
    // No inline script: the only one is the page's own file.
    expect(html.match(/<script/g)).toHaveLength(1);
    expect(html).toContain('<script src="/preview/preview.js" defer></script>');
    expect((await fetch(`${running.url}/preview/preview.js`)).status).toBe(200);
  });

  it('refuses a post without the token, with a wrong one, or from another site, and does nothing', async () => {
    const phone = '+256772123471';
    const { cookie, token } = await openPage();
    const body = { phone, action: { kind: 'dial' } };
    const refusals = [
      await turn(body, {}),
      await turn(body, { cookie }),
      await turn(body, { 'x-csrf-token': token }),
      await turn(body, { cookie, 'x-csrf-token': `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}` }),
      await turn(body, { cookie: `${PREVIEW_COOKIE}=short`, 'x-csrf-token': 'short' }),
      await turn(body, { cookie, 'x-csrf-token': token, origin: 'https://elsewhere.example' }),
    ];
    for (const res of refusals) {
      expect(res.status).toBe(403);
      expect(((await res.json()) as { detail: string }).detail).toMatch(/CSRF token/);
    }
    expect(await stored(phone)).toBeNull();
    const ok = await turn(body, { cookie, 'x-csrf-token': token });
    expect(ok.status).toBe(200);
    expect(await stored(phone)).not.toBeNull();
  });

  it('answers bodies out of bounds with a 4xx and the reason', async () => {
    const { cookie, token } = await openPage();
    const headers = { cookie, 'x-csrf-token': token };
    const phone = '+256772123472';
    const cases: Array<[unknown, number, RegExp]> = [
      ['{"phone":', 400, /not valid JSON/],
      [JSON.stringify({ phone, action: { kind: 'ussd', text: 'x'.repeat(9000) } }), 413, /too large/],
      [{ phone: '0772123472', action: { kind: 'dial' } }, 400, /^phone: a phone number in \+ form/],
      // Refused as the USSD adapter refuses a caller's: no such country code, no such line, a landline.
      [{ phone: '+99912345678', action: { kind: 'dial' } }, 400, /^phone: not a valid mobile number/],
      [{ phone: '+25600000000', action: { kind: 'dial' } }, 400, /^phone: not a valid mobile number/],
      [{ phone: '+256414123456', action: { kind: 'dial' } }, 400, /^phone: not a valid mobile number/],
      [{ phone, action: { kind: 'pay' } }, 400, /^action\.kind/],
      [{ phone, action: { kind: 'ussd', text: '1'.repeat(183) } }, 400, /^action\.text/],
      [{ phone, action: { kind: 'telegram-press', data: 'c:'.padEnd(65, '1') } }, 400, /^action\.data/],
      [{ phone, action: { kind: 'dial', extra: 1 } }, 400, /^action/],
      [{ phone, lang: 'xx', action: { kind: 'dial' } }, 400, /^lang/],
      [{ phone, action: { kind: 'whatsapp-tap', id: '' } }, 400, /^action\.id/],
      [[1, 2], 400, /^body/],
    ];
    for (const [body, status, reason] of cases) {
      const res = await turn(body, headers);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(status);
      expect(((await res.json()) as { detail: string }).detail).toMatch(reason);
    }
    const form = await fetch(`${running.url}/preview/turn`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
      body: `phone=${encodeURIComponent(phone)}`,
    });
    expect(form.status).toBe(400);
    expect(((await form.json()) as { detail: string }).detail).toBe('The body must be JSON.');
    expect(await stored(phone)).toBeNull();
  });

  it('keeps its own conversation: the real user of the number is not touched', async () => {
    const phone = '+256772123473';
    const { cookie, token } = await openPage();
    const res = await turn({ phone, action: { kind: 'dial' } }, { cookie, 'x-csrf-token': token });
    const answer = (await res.json()) as { prompt: Prompt; ussd: { text: string } };
    expect(answer.ussd.text).toContain('1. Pay someone');
    expect(await stored(phone)).not.toBeNull();
    expect(await running.store.get(keys.conversation({ channel: 'ussd', conversationId: phone }))).toBeNull();
  });
});

describe('/preview: its own conversation on the demo sandbox', () => {
  /** Posts one action for `phone` as the page does; answers the renderings. */
  async function act(phone: string, action: unknown, lang?: string) {
    const { cookie, token } = await openPage();
    const res = await turn({ phone, action, ...(lang ? { lang } : {}) }, { cookie, 'x-csrf-token': token });
    expect(res.status).toBe(200);
    return (await res.json()) as { prompt: Prompt; ussd: { text: string } };
  }

  it("offers each number its country's menu", async () => {
    const labels = async (phone: string) =>
      (await act(phone, { kind: 'dial' })).prompt.choices?.map((c) => c.label) ?? [];
    expect(await labels('+2348031400001')).toContain('Buy data');
    expect(await labels('+256772123475')).not.toContain('Buy data');
  });

  it("pays on the sandbox as the preview's own participant, choices clicked on Slack and answers typed on WhatsApp", async () => {
    const phone = '+256772123476';
    /** What a person answers on each screen (first rule whose words match): a choice's label or a text. */
    const rules: Array<[RegExp, { pick: RegExp } | { type: string }]> = [
      [/What would you like to do\?/, { pick: /^Pay someone$/ }],
      [/Send [\d,]+ UGX/, { pick: /^Confirm$/ }],
      [/Pay whom\?/, { pick: /Someone new|Mobile money/ }],
      [/What do you want to send/, { pick: /^Mobile money$/ }],
      [/phone number of the person/i, { type: '0772000001' }],
      [/Pay Sarah Nakato|knows this number as/i, { pick: /Pay Sarah Nakato|^Yes/ }],
      [/first name/i, { type: 'Sarah' }],
      [/last name/i, { type: 'Nakato' }],
      [/currency/i, { pick: /^UGX$/ }],
      [/Enter the amount/i, { type: '5000' }],
      [/description|note for the recipient/i, { type: 'Lunch' }],
      [/Enter your PIN/, { type: '1234' }],
    ];
    let answer = await act(phone, { kind: 'dial' });
    for (let step = 0; step < 20 && !answer.prompt.final; step++) {
      const rule = rules.find(([words]) => words.test(answer.prompt.text));
      if (!rule) throw new Error(`no rule for: ${answer.prompt.text}`);
      const [, what] = rule;
      if ('type' in what) answer = await act(phone, { kind: 'whatsapp-text', text: what.type });
      else {
        const index = answer.prompt.choices?.findIndex((c) => what.pick.test(c.label)) ?? -1;
        expect(index, answer.prompt.text).toBeGreaterThanOrEqual(0);
        const choice = answer.prompt.choices![index]!;
        answer = await act(phone, { kind: 'slack-click', actionId: `momo_choice_${index}`, value: choice.id });
      }
    }
    expect(answer.prompt.text).toMatch(/Sent: 5,000 UGX to Sarah Nakato/);
    const chats = (running.sandbox?.controls.payments() ?? []).map(
      (p) => (p.metadata as Record<string, unknown> | null)?.chat,
    );
    expect(chats.filter((chat) => chat === `ussd:preview:${phone}`)).toHaveLength(1);
    expect(chats).not.toContain(`ussd:${phone}`);
  });
});

/** What each pane shows now: the USSD screen, the first message's own text in each chat, and the engine's Prompt. */
async function panes(page: Page) {
  return page.evaluate(() => {
    const own = (selector: string) => {
      const node = document.querySelector(selector);
      return node?.firstChild?.nodeType === Node.TEXT_NODE ? (node.firstChild.textContent ?? '') : '';
    };
    return {
      ussd: document.getElementById('ussd-screen')?.textContent ?? '',
      telegram: own('#telegram-chat .bubble'),
      slack: own('#slack-chat .section'),
      whatsapp: own('#whatsapp-chat .bubble'),
      prompt: JSON.parse(document.getElementById('prompt-raw')?.textContent ?? 'null') as {
        text: string;
        choices?: Array<{ id: string; label: string }>;
        input?: string;
      },
    };
  });
}

/** Waits for the page to draw its `n`-th answer and returns what the panes show; all four show the Prompt. */
async function drawn(page: Page, n: number) {
  await page.waitForSelector(`body[data-turn="${n}"][data-state="ready"]`);
  const shown = await panes(page);
  const { text } = shown.prompt;
  expect(shown.telegram).toBe(text);
  expect(shown.slack).toBe(text);
  expect(shown.whatsapp).toBe(text);
  // USSD fits the text to 182 characters, in plain GSM-7: its first line starts the same.
  expect(shown.ussd.slice(0, 12)).toBe(text.slice(0, 12));
  expect(shown.ussd.length).toBeLessThanOrEqual(182);
  return shown;
}

describe('/preview in headless Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('moves one conversation from any pane; every pane shows each new screen', async () => {
    const phone = '+256772123474';
    const page = await browser.newPage({ viewport: { width: 1500, height: 900 } });
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    try {
      await page.goto(`${running.url}/preview?phone=${encodeURIComponent(phone)}`);
      const menu = await drawn(page, 1);
      expect(menu.ussd).toContain('1. Pay someone');
      expect(await page.locator('#telegram-chat .keyboard button').first().textContent()).toBe('Pay someone');
      expect(await page.locator('#slack-chat .actions button').first().textContent()).toBe('Pay someone');

      // A press on Telegram's inline keyboard: its callback_data picks the choice.
      await page.click('#telegram-chat .keyboard button:text-is("Pay someone")');
      const pay = await drawn(page, 2);
      expect(pay.prompt.text).not.toBe(menu.prompt.text);
      expect(pay.prompt.choices?.length).toBeGreaterThan(0);
      const labels = pay.prompt.choices!.map((c) => c.label);
      expect(await page.locator('#slack-chat .actions').first().locator('button').allTextContents()).toEqual(labels);

      // Typed on WhatsApp: a number picks that choice, as the adapter reads it.
      await page.fill('#whatsapp-text', '1');
      await page.click('#whatsapp-form button');
      const number = await drawn(page, 3);
      expect(number.prompt.text).not.toBe(pay.prompt.text);
      expect(number.prompt.input).toBe('phone');

      // Slack's "Answer" opens the modal; its text is the answer.
      await page.click('#slack-chat .actions button:text-is("Answer")');
      expect(await page.textContent('#slack-modal-label')).toBe('Phone number');
      await page.fill('#slack-modal-input', '0772000001');
      await page.click('#slack-modal-submit');
      const after = await drawn(page, 4);
      expect(after.prompt.text).not.toBe(number.prompt.text);

      // Typed on USSD: 00 is Home, the menu again in every pane.
      await page.fill('#ussd-answer', '00');
      await page.click('#ussd-form button');
      expect((await drawn(page, 5)).prompt.text).toBe(menu.prompt.text);

      // A word only WhatsApp knows is answered in its pane alone; the conversation does not move.
      await page.fill('#whatsapp-text', 'help');
      await page.click('#whatsapp-form button');
      expect((await drawn(page, 6)).prompt.text).toBe(menu.prompt.text);
      expect(await page.textContent('#whatsapp-chat .said')).toMatch(/^I move mobile money/);
      expect(await page.locator('#telegram-chat .said').count()).toBe(0);

      // Another language: the same menu, in Kiswahili everywhere.
      await page.selectOption('#lang', 'sw');
      const swahili = await drawn(page, 7);
      expect(swahili.prompt.text).toBe('Ungependa kufanya nini?');
      expect(swahili.ussd).toContain('1. Mlipe mtu');

      // The screenshot the docs show: back in English, a question open in every pane.
      await page.selectOption('#lang', 'en');
      await drawn(page, 8);
      await page.click('#telegram-chat .keyboard button:text-is("Pay someone")');
      await drawn(page, 9);
      await page.screenshot({ path: screenshotPath('preview.png') });
      expect(errors).toEqual([]);
    } finally {
      await page.close();
    }
  });
});
