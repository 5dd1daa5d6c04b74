/**
 * The USSD channel in the whole product (startApp: the real engine, flows, policy and the embedded
 * sandbox), as `npm start` runs it: a payment completed through the simulator page in headless Chromium,
 * and as a gateway that repeats every request: the payment reaches the sandbox exactly once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import { loadConfig } from '../../../src/config.js';
import { startApp, type RunningApp } from '../../../src/app.js';
import { CHROMIUM_ARGS } from './chromium.js';
import { postAt, postJson } from './helpers.js';

/** The demo access policy gives every USSD number this PIN. */
const DEMO_PIN = '1234';
/** A sandbox test number registered as "Sarah Nakato". */
const RECIPIENT = '0772000001';

/** Answers of a whole payment from the main menu, as the flows ask for them. */
const PAYMENT = ['1', '1', RECIPIENT, 'Sarah', 'Nakato', '5000', '1', 'lunch', '1', DEMO_PIN];

let running: RunningApp;
beforeAll(async () => {
  running = await startApp(loadConfig({ PORT: '0', LOG_LEVEL: 'silent' }));
});
afterAll(async () => {
  await running?.stop();
});

async function paymentsOf(phone: string) {
  const page = await running.client.payments.list();
  return page.results.filter((p) => (p.metadata as Record<string, unknown> | null)?.chat === `ussd:${phone}`);
}

describe('USSD end to end (real engine + sandbox)', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('pays someone through the simulator page, every screen within 182 characters', async () => {
    const phone = '+256772123401';
    const page: Page = await browser.newPage();
    try {
      await page.goto(`${running.url}/simulator?phone=${encodeURIComponent(phone)}`);
      await page.click('#dial');
      await page.waitForSelector('body[data-state="open"]');
      const screens = [(await page.textContent('#screen')) ?? ''];
      expect(screens[0]).toContain('1. Pay someone');
      for (const answer of PAYMENT) {
        await page.fill('#answer', answer);
        await page.click('#send');
        await page.waitForSelector('body[data-state="open"], body[data-state="ended"]');
        screens.push((await page.textContent('#screen')) ?? '');
      }
      for (const screen of screens) expect(screen.length).toBeLessThanOrEqual(182);
      expect(screens.at(-2)).toMatch(/Enter your PIN/);
      expect(screens.at(-1)).toMatch(/Payment \d+ submitted/);
      expect(await page.getAttribute('body', 'data-state')).toBe('ended');
    } finally {
      await page.close();
    }
    const payments = await paymentsOf(phone);
    expect(payments).toHaveLength(1);
    expect(payments[0]).toMatchObject({ amount: '5000.00', currency: 'UGX', description: 'lunch' });
  });
});

describe('USSD end to end with repeated requests', () => {
  it("Africa's Talking: every request sent twice, one payment", async () => {
    const phone = '+256772123402';
    const fields = (text: string) => ({ sessionId: 'E2E-AT', serviceCode: '*384*123#', phoneNumber: phone, networkCode: '63902', text });
    const answers: string[] = [];
    let last = await postAt(running.url, fields(''));
    expect(await postAt(running.url, fields(''))).toEqual(last);
    for (const answer of PAYMENT) {
      answers.push(answer);
      last = await postAt(running.url, fields(answers.join('*')));
      expect(last.status).toBe(200);
      expect(await postAt(running.url, fields(answers.join('*')))).toEqual(last);
    }
    expect(last.body).toMatch(/^END Payment \d+ submitted/);
    expect(await paymentsOf(phone)).toHaveLength(1);
  });

  it('Hubtel: every request sent twice, one payment', async () => {
    const phone = '+256772123403';
    const hop = (Type: string, Sequence: number, Message: string) =>
      postJson(running.url, 'hubtel', { Type, Mobile: phone.slice(1), SessionId: 'E2E-H', ServiceCode: '384*123', Message, Operator: 'mtn', Sequence });
    let last = await hop('initiation', 1, '*384*123#');
    expect((await hop('initiation', 1, '*384*123#')).json).toEqual(last.json);
    for (const [i, answer] of PAYMENT.entries()) {
      last = await hop('response', i + 2, answer);
      expect((await hop('response', i + 2, answer)).json).toEqual(last.json);
    }
    expect(last.json).toMatchObject({ Type: 'release' });
    expect(last.json.Message).toMatch(/Payment \d+ submitted/);
    expect(await paymentsOf(phone)).toHaveLength(1);
  });
});
