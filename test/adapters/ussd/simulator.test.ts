import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { chromium, type Browser, type Page } from 'playwright-core';
import { createDialer } from '../../../adapters/ussd/dialer.js';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from './chromium.js';
import { PHONE, PIN, startUssd } from './helpers.js';
import { productArgs, ROOT } from '../../product.js';

type Started = Awaited<ReturnType<typeof startUssd>>;

/** Sends one answer through the page's input and Send button, then waits for the next screen. */
async function send(page: Page, answer: string): Promise<string> {
  await page.fill('#answer', answer);
  await page.click('#send');
  await page.waitForSelector('body[data-state="open"], body[data-state="ended"]');
  return (await page.textContent('#screen')) ?? '';
}

describe('simulator page in headless Chromium', () => {
  let app: Started;
  let browser: Browser;

  beforeAll(async () => {
    app = await startUssd();
    browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  it('is one self-contained page', async () => {
    const res = await fetch(`${app.url}/simulator`);
    expect(res.headers.get('content-type')).toContain('text/html');
    const html = await res.text();
    expect(html).toContain('*384*123#');
    expect(html).not.toMatch(/<(script|link)[^>]+(src|href)=/);
  });

  it('completes a payment through the keypad and ends on END', async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`${app.url}/simulator?phone=${encodeURIComponent(PHONE)}`);
      expect(await page.inputValue('#phone')).toBe(PHONE);
      await page.click('#dial');
      await page.waitForSelector('body[data-state="open"]');
      expect(await page.textContent('#screen')).toContain('1. Pay someone');
      // The first answer typed on the keypad, the rest in the input.
      await page.click('#keypad button:text-is("1")');
      expect(await page.inputValue('#answer')).toBe('1');
      await page.click('#send');
      await page.waitForSelector('#screen:has-text("Enter amount")');
      expect(await send(page, '4500')).toContain('Enter PIN');
      expect(await send(page, PIN)).toBe('Paid 4500 UGX. Thank you.');
      expect(await page.getAttribute('body', 'data-state')).toBe('ended');
      expect(await page.textContent('#status')).toBe('Session ended.');
      expect(app.payments).toEqual([{ phone: PHONE, amount: '4500' }]);
      // Exactly as Africa's Talking: one sessionId for the dial, hops 0..3.
      const ids = app.inbounds.map((i) => i.messageId);
      const sessionId = ids[0]?.split(':')[0];
      expect(ids).toEqual([0, 1, 2, 3].map((hop) => `${sessionId}:${hop}`));

      // Dialling again opens a fresh session.
      await page.click('#dial');
      await page.waitForSelector('body[data-state="open"]');
      const next = app.inbounds.at(-1);
      expect(next?.newSession).toBe(true);
      expect(next?.messageId.split(':')[0]).not.toBe(sessionId);
      await page.click('#cancel');
      expect(await page.getAttribute('body', 'data-state')).toBe('ended');
    } finally {
      await page.close();
    }
  });

  it('sends an answer containing * whole', async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`${app.url}/simulator`);
      await page.click('#dial');
      await page.waitForSelector('body[data-state="open"]');
      expect(await send(page, '2')).toContain('Type your note');
      expect(await send(page, 'dial *165# later')).toBe('Note saved: dial *165# later');
    } finally {
      await page.close();
    }
  });
});

describe('terminal simulator', () => {
  it('the dialer speaks the Africa\u2019s Talking protocol', async () => {
    const app = await startUssd();
    try {
      const dialer = createDialer({ url: app.url, phone: PHONE, serviceCode: '*384*123#' });
      expect((await dialer.dial()).text).toContain('1. Pay someone');
      expect(await dialer.answer('1')).toEqual({ text: 'Enter amount\n0 Back 00 Home', final: false });
      await dialer.answer('60');
      expect(await dialer.answer(PIN)).toEqual({ text: 'Paid 60 UGX. Thank you.', final: true });
      expect(app.payments).toHaveLength(1);
    } finally {
      await app.close();
    }
  });

  it('npm run ussd: reads answers from stdin and stops at END', async () => {
    const app = await startUssd();
    try {
      const child = spawn(process.execPath, [...productArgs('adapters/ussd/cli'), '--phone', PHONE, '--url', app.url], {
        cwd: ROOT,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
      child.stdin.end(`1\n75\n${PIN}\n`);
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      expect(code).toBe(0);
      expect(out).toContain('Welcome to MoMo');
      expect(out).toContain('Paid 75 UGX. Thank you.');
      expect(out).toContain('[session ended]');
      expect(app.payments).toEqual([{ phone: PHONE, amount: '75' }]);
    } finally {
      await app.close();
    }
  });
});
