/**
 * The operator page (/ops) in headless Chromium after scripted USSD conversations over real HTTP (Africa's
 * Talking): one paid, one abandoned at the amount (the gateway's end-of-session report), one request
 * cancelled. The page shows that drop-off in what it draws and says, refreshes itself, and writes a
 * screenshot (docs/ops-page.png with UPDATE_SCREENSHOTS: test/screenshots.ts). Who may call /ops: an operator signed in on the form, or Basic auth with OPS_USER / OPS_PASSWORD, open in
 * the demo, not served in production without them; bad queries get a 400; data is shown as text only.
 */
import { get as httpGet, type IncomingHttpHeaders } from 'node:http';
import express from 'express';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type RunningApp } from '../../src/app.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import type { Funnel, FunnelReport } from '../../src/ops/funnel.js';
import { addOpsPage } from '../../src/ops/page.js';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../adapters/ussd/chromium.js';
import { AtSession, startProduct } from '../e2e/helpers.js';
import { screenshotPath } from '../screenshots.js';
import { productDatabase } from '../journal/server-database.js';

const USER = 'operator';
const PASSWORD = 'a long operator password';
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

let app: RunningApp;
let browser: Browser;
beforeAll(async () => {
  app = await startApp(
    loadConfig({
      ...(await productDatabase()),
      PORT: '0',
      LOG_LEVEL: 'silent',
      OPS_USER: USER,
      OPS_PASSWORD: PASSWORD,
    }),
  );
  browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
});
afterAll(async () => {
  await browser?.close();
  await app?.stop();
});

/** One USSD session through Africa's Talking: the dial, then each answer. */
async function session(phone: string, answers: string[]): Promise<AtSession> {
  const at = new AtSession(app.url, phone);
  await at.dial();
  for (const answer of answers) await at.answer(answer);
  return at;
}

/** Africa's Talking's end-of-session report of a session the user left. */
async function endOfSession(at: AtSession): Promise<void> {
  const res = await fetch(`${app.url}/ussd/africastalking/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      sessionId: at.sessionId,
      phoneNumber: at.phoneNumber,
      status: 'Incomplete',
      durationInMillis: '52000',
      hopsCount: String(at.screens.length),
      input: '1*1*0772000002*John*Okello',
      lastAppResponse: at.screens.at(-1) ?? '',
      errorMessage: '',
    }),
  });
  expect(await res.json()).toEqual({ recorded: true });
}

async function openPage(): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  // Operators sign in on the form (src/ops/access.ts); the session cookie carries the page's own reads.
  await page.goto(`${app.url}/ops`);
  await page.fill('input[name=name]', USER);
  await page.fill('input[name=password]', PASSWORD);
  await Promise.all([page.waitForURL(/\/ops$/), page.click('button[type=submit]')]);
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  (page as Page & { errors: string[] }).errors = errors;
  return page;
}

/** What the funnel chart of a flow drew: its labels and each dataset's values, read from Chart.js. */
const drawn = (page: Page, flow: string, chart: string) =>
  page.evaluate(
    ({ flow, chart }) => {
      const canvas = document.querySelector(`section.flow[data-flow="${flow}"] canvas.${chart}`);
      const drawing = (
        window as unknown as {
          Chart: {
            getChart(
              c: unknown,
            ): { data: { labels: string[]; datasets: Array<{ label: string; data: number[] }> } } | undefined;
          };
        }
      ).Chart.getChart(canvas);
      return drawing
        ? {
            labels: drawing.data.labels,
            datasets: Object.fromEntries(drawing.data.datasets.map((d) => [d.label, d.data])),
          }
        : null;
    },
    { flow, chart },
  );

const cells = (page: Page, selector: string) => page.$$eval(`${selector} td`, (tds) => tds.map((td) => td.textContent));

describe('the operator page after scripted conversations', () => {
  it('shows the drop-off at the amount, the outcomes per channel and the service, and refreshes itself', async () => {
    const paid = await session('+256700222001', ['1', '1', '0772000001', 'Sarah', 'Nakato', '5000', '1', '1', '1234']);
    expect(paid.screens.at(-1)).toMatch(/^END /);
    const left = await session('+256700222002', ['1', '1', '0772000002', 'John', 'Okello']);
    expect(left.screens.at(-1)).toMatch(/amount/i);
    await endOfSession(left);
    const cancelled = await session('+256700222003', ['2', '0772000003', '3000', '1', 'rent', '2', '2']);
    expect(cancelled.screens.at(-1)).toMatch(/cancelled/i);

    const page = await openPage();
    await page.clock.install();
    await page.goto(`${app.url}/ops`);
    await page.waitForSelector('body[data-state="ready"]');

    // What it says.
    const pay = 'section.flow[data-flow="pay"]';
    expect(await page.textContent(`${pay} .flow-title`)).toBe('Pay someone: 2 started');
    expect(await page.textContent(`${pay} .flow-summary`)).toBe('Ended: 1 accepted by the service, 1 abandoned.');
    expect(await page.textContent(`${pay} .flow-dropoff`)).toBe(
      'Largest drop-off: Amount asked, 1 of 2 did not move on (1 abandoned, 0 failed).',
    );
    const amountRow = await cells(page, `${pay} tr[data-step="awaitingAmount"]`);
    expect(amountRow.slice(0, 6)).toEqual(['Amount asked', '2', '1', '1', '0', '1 (50 %)']);
    expect(await page.getAttribute(`${pay} tr[data-step="awaitingAmount"]`, 'class')).toBe('worst');
    expect((await cells(page, `${pay} tr[data-step="done"]`)).slice(0, 2)).toEqual(['Outcome shown (end)', '1']);
    expect((await cells(page, `${pay} table.outcomes tbody tr`)).slice(1)).toEqual(['ussd', '2', '1', '1']);
    expect(await page.textContent('section.flow[data-flow="request"] .flow-summary')).toBe('Ended: 1 cancelled.');
    expect(await page.textContent('section.flow[data-flow="check"] .flow-summary')).toBe('No run in this period.');

    // What it drew.
    const funnel = await drawn(page, 'pay', 'funnel-chart');
    const at = funnel!.labels.indexOf('Amount asked');
    expect(at).toBeGreaterThanOrEqual(0);
    expect(funnel!.datasets.abandoned![at]).toBe(1);
    expect(funnel!.datasets['moved on']![at]).toBe(1);
    expect(funnel!.datasets['ended here']![funnel!.labels.indexOf('Outcome shown')]).toBe(1);
    const times = await drawn(page, 'pay', 'time-chart');
    expect(times!.labels).toContain('Amount asked');
    expect(times!.datasets.median!.every((s) => s >= 0)).toBe(true);
    const outcomes = await drawn(page, 'pay', 'outcome-chart');
    expect(outcomes!.labels).toEqual([expect.stringMatching(/^\d{4}-\d{2}-\d{2} ussd$/)]);
    expect(outcomes!.datasets).toEqual({ 'accepted by the service': [1], abandoned: [1] });

    // The service and the queue, from the metrics registry.
    expect(Number(await page.textContent('#service-total'))).toBeGreaterThan(0);
    expect(await page.textContent('#service-429')).toBe('0');
    expect(await page.textContent('#queue-depth')).toMatch(/^\d+$/);

    // The page down to the pay flow's section (README shows it as docs/ops-page.png).
    const payBox = (await page.locator(pay).boundingBox())!;
    await page.screenshot({
      path: screenshotPath('ops-page.png'),
      fullPage: true,
      clip: { x: 0, y: 0, width: 1280, height: payBox.y + payBox.height + 16 },
    });

    // It refreshes itself: another abandonment shows without reloading the page.
    const again = await session('+256700222004', ['1', '1', '0772000002', 'John', 'Okello']);
    await endOfSession(again);
    await page.clock.runFor(16_000);
    await page.waitForSelector('body[data-loads="2"]');
    expect((await cells(page, `${pay} tr[data-step="awaitingAmount"]`)).slice(0, 4)).toEqual([
      'Amount asked',
      '3',
      '1',
      '2',
    ]);
    expect((await drawn(page, 'pay', 'funnel-chart'))!.datasets.abandoned![at]).toBe(2);
    expect((page as Page & { errors: string[] }).errors).toEqual([]);
    await page.context().close();
  });
});

describe('who may call /ops', () => {
  const paths = [
    '/ops',
    '/ops/funnel.json',
    '/ops/status.json',
    '/ops/chart.umd.min.js',
    '/ops/ops.js',
    '/ops/ops.css',
  ];
  /** Three of them for the refusals: 6 ways x 3 stay under the 20 failed sign-ins an address may make. */
  const refused = ['/ops', '/ops/funnel.json', '/ops/chart.umd.min.js'];

  it.each([
    ['no credentials', undefined],
    ['a wrong password', basic(USER, 'a long operator passwore')],
    ['a wrong user', basic('operators', PASSWORD)],
    ['no colon', `Basic ${Buffer.from(USER + PASSWORD).toString('base64')}`],
    ['another scheme', `Bearer ${PASSWORD}`],
    ['garbage', 'Basic !!!!'],
  ])('refuses %s with 401', async (_what, authorization) => {
    for (const path of refused) {
      const res = await fetch(`${app.url}${path}`, { headers: authorization ? { authorization } : {} });
      expect(res.status, path).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Basic realm=/);
      expect(await res.text()).not.toMatch(/Chart|momo-chat · operations/);
    }
  });

  it('serves every route to OPS_USER with OPS_PASSWORD, with headers that keep the page to itself', async () => {
    const headers = { authorization: basic(USER, PASSWORD) };
    for (const path of paths) expect((await fetch(`${app.url}${path}`, { headers })).status, path).toBe(200);
    const page = await fetch(`${app.url}/ops`, { headers });
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(page.headers.get('cache-control')).toBe('no-store');
    const chart = await fetch(`${app.url}/ops/chart.umd.min.js`, { headers });
    expect(chart.headers.get('content-type')).toMatch(/javascript/);
    expect(await chart.text()).toMatch(/Chart\.js v4/);
  });

  it.each([
    ['days=0', /days/],
    ['days=31', /days/],
    ['days=seven', /days/],
    ['days=1&days=2', /days/],
    ['channel=fax', /channel/],
    ['channel=', /channel/],
    ['user=%2B256700222001', /user/],
  ])('answers ?%s with 400 and a reason', async (query, reason) => {
    const res = await fetch(`${app.url}/ops/funnel.json?${query}`, {
      headers: { authorization: basic(USER, PASSWORD) },
    });
    expect(res.status).toBe(400);
    expect(JSON.stringify(await res.json())).toMatch(reason);
  });

  it('refuses an address with too many failed sign-ins for a while, even with the right password, and no other', async () => {
    const server = express();
    addOpsPage(server, {
      funnel: { daysKept: 30 } as Funnel,
      metrics: {
        status: async () => ({ queueDepth: 0, service: { byStatus: {}, total: 0, rateLimited: 0, errors: 0 } }),
      },
      credentials: { user: USER, password: PASSWORD },
      open: false,
      signInLimit: { failures: 3, windowSeconds: 60 },
    });
    const listening = await new Promise<import('node:http').Server>((resolve) => {
      const s = server.listen(0, () => resolve(s));
    });
    const port = (listening.address() as import('node:net').AddressInfo).port;
    /** A GET of the page's status from a given local address (another caller on the loopback). */
    const get = (from: string, password: string) =>
      new Promise<{ status: number; headers: IncomingHttpHeaders; body: string }>((resolve, reject) => {
        const req = httpGet(
          {
            host: '127.0.0.1',
            port,
            path: '/ops/status.json',
            localAddress: from,
            headers: { authorization: basic(USER, password) },
          },
          (res) => {
            let body = '';
            res.on('data', (chunk: Buffer) => (body += chunk.toString()));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
          },
        );
        req.on('error', reject);
      });
    try {
      for (let i = 0; i < 3; i++) expect((await get('127.0.0.1', `guess-${i}`)).status).toBe(401);
      const locked = await get('127.0.0.1', PASSWORD);
      expect(locked.status).toBe(429);
      expect(Number(locked.headers['retry-after'])).toBeGreaterThan(0);
      expect(JSON.parse(locked.body).detail).toMatch(/Too many failed sign-ins/);
      // Another address is not held back by this one's guesses.
      expect((await get('127.0.0.2', PASSWORD)).status).toBe(200);
    } finally {
      listening.close();
    }
  });

  it('never lets a right credential clear the failures counted against its address', async () => {
    const server = express();
    addOpsPage(server, {
      funnel: { daysKept: 30 } as Funnel,
      metrics: {
        status: async () => ({ queueDepth: 0, service: { byStatus: {}, total: 0, rateLimited: 0, errors: 0 } }),
      },
      credentials: { user: USER, password: PASSWORD },
      opsToken: 'ops-token-of-sixteen-or-more',
      open: false,
      signInLimit: { failures: 3, windowSeconds: 60 },
    });
    const listening = await new Promise<import('node:http').Server>((resolve) => {
      const s = server.listen(0, () => resolve(s));
    });
    const url = `http://127.0.0.1:${(listening.address() as import('node:net').AddressInfo).port}`;
    const guess = (password: string) =>
      fetch(`${url}/ops/status.json`, { headers: { authorization: basic(USER, password) } }).then((r) => r.status);
    const token = () =>
      fetch(`${url}/ops/payments.json`, { headers: { authorization: 'Bearer ops-token-of-sixteen-or-more' } }).then(
        (r) => r.status,
      );
    try {
      expect(await guess('guess-1')).toBe(401);
      expect(await guess('guess-2')).toBe(401);
      // The token is right: its own try is given back, the two guesses stay counted.
      expect(await token()).not.toBe(401);
      expect(await guess('guess-3')).toBe(401);
      expect(await token()).toBe(429);
      expect(await guess(PASSWORD)).toBe(429);
    } finally {
      listening.close();
    }
  });

  it('serves the script routes to OPS_TOKEN alone, without OPS_USER', async () => {
    const server = express();
    expect(
      addOpsPage(server, {
        funnel: { daysKept: 30 } as Funnel,
        metrics: {
          status: async () => ({ queueDepth: 0, service: { byStatus: {}, total: 0, rateLimited: 0, errors: 0 } }),
        },
        opsToken: 'ops-token-of-sixteen-or-more',
        open: false,
      }),
    ).toBe(true);
    const listening = await new Promise<import('node:http').Server>((resolve) => {
      const s = server.listen(0, () => resolve(s));
    });
    const url = `http://127.0.0.1:${(listening.address() as import('node:net').AddressInfo).port}`;
    try {
      const read = await fetch(`${url}/ops/payments.json`, {
        headers: { authorization: 'Bearer ops-token-of-sixteen-or-more' },
      });
      expect([read.status, await read.text()]).not.toContainEqual(expect.stringMatching(/No route/));
      expect([401, 404]).not.toContain(read.status);
      // The token reads only: the pages still need an operator.
      const page = await fetch(`${url}/ops/status.json`, {
        headers: { authorization: 'Bearer ops-token-of-sixteen-or-more' },
      });
      expect(page.status).toBe(401);
    } finally {
      listening.close();
    }
  });

  it('is open in the demo without OPS_USER, and not served in production without it or OPS_TOKEN', async () => {
    const demo = await startProduct();
    try {
      expect((await fetch(`${demo.url}/ops/funnel.json`)).status).toBe(200);
    } finally {
      await demo.stop();
    }
    const funnel = { daysKept: 30 } as Funnel;
    const production = express();
    expect(
      addOpsPage(production, {
        funnel,
        metrics: {
          status: async () => ({ queueDepth: 0, service: { byStatus: {}, total: 0, rateLimited: 0, errors: 0 } }),
        },
        open: false,
      }),
    ).toBe(false);
    const served = await new Promise<import('node:http').Server>((resolve) => {
      const server = production.listen(0, () => resolve(server));
    });
    try {
      const port = (served.address() as import('node:net').AddressInfo).port;
      expect((await fetch(`http://127.0.0.1:${port}/ops`)).status).toBe(404);
    } finally {
      served.close();
    }
  });

  it('refuses to start with half of the pair', () => {
    expect(() => loadConfig({ OPS_USER: USER })).toThrow(
      new ConfigError('OPS_USER and OPS_PASSWORD go together: OPS_PASSWORD is not set'),
    );
    expect(() => loadConfig({ OPS_PASSWORD: PASSWORD })).toThrow(
      new ConfigError('OPS_USER and OPS_PASSWORD go together: OPS_USER is not set'),
    );
    expect(() => loadConfig({ OPS_USER: 'a:b', OPS_PASSWORD: PASSWORD })).toThrow(ConfigError);
  });
});

describe('when the figures cannot be read', () => {
  it('answers 503 with a reason, and the page says it could not load them', async () => {
    const fake = {
      daysKept: 30,
      report: async () => Promise.reject(new Error('Connection is closed.')),
    } as unknown as Funnel;
    const server = express();
    addOpsPage(server, {
      funnel: fake,
      metrics: {
        status: async () => ({ queueDepth: null, service: { byStatus: {}, total: 0, rateLimited: 0, errors: 0 } }),
      },
      open: true,
    });
    const listening = await new Promise<import('node:http').Server>((resolve) => {
      const s = server.listen(0, () => resolve(s));
    });
    const base = `http://127.0.0.1:${(listening.address() as import('node:net').AddressInfo).port}`;
    const page = await browser.newPage();
    try {
      const res = await fetch(`${base}/ops/funnel.json`);
      expect(res.status).toBe(503);
      expect((await res.json()).detail).toMatch(/could not be read/);
      await page.goto(`${base}/ops`);
      await page.waitForSelector('body[data-state="error"]');
      expect(await page.textContent('#updated')).toMatch(
        /^Could not load the figures: \/ops\/funnel\.json.* answered 503/,
      );
    } finally {
      await page.close();
      listening.close();
    }
  });
});

describe('what the page shows', () => {
  it('shows names from the data as text, never as markup', async () => {
    const hostile = '<img src=x onerror="window.pwned=1">';
    const steps = [
      {
        step: hostile,
        label: hostile,
        final: false,
        entered: 3,
        movedOn: 1,
        abandoned: 2,
        failed: 0,
        dropOff: 2,
        medianMs: 1000,
        p90Ms: 2000,
        timed: 1,
        channels: {},
      },
    ];
    const report: FunnelReport = {
      days: ['2026-11-20'],
      channels: ['ussd'],
      flows: [
        {
          flow: 'pay',
          label: hostile,
          started: 3,
          steps,
          outcomes: {
            paid: 0,
            done: 0,
            refused: 0,
            failed: 0,
            processing: 0,
            cancelled: 0,
            left: 0,
            abandoned: 2,
            error: 0,
          },
          outcomesByDay: [
            {
              day: hostile,
              channel: 'ussd',
              started: 3,
              paid: 0,
              done: 0,
              refused: 0,
              failed: 0,
              processing: 0,
              cancelled: 0,
              left: 0,
              abandoned: 2,
              error: 0,
            },
          ],
        },
      ],
    };
    const fake = { daysKept: 30, report: async () => report } as unknown as Funnel;
    const server = express();
    addOpsPage(server, {
      funnel: fake,
      metrics: {
        status: async () => ({ queueDepth: null, service: { byStatus: {}, total: 0, rateLimited: 0, errors: 0 } }),
      },
      open: true,
    });
    const listening = await new Promise<import('node:http').Server>((resolve) => {
      const s = server.listen(0, () => resolve(s));
    });
    const page = await browser.newPage();
    try {
      await page.goto(`http://127.0.0.1:${(listening.address() as import('node:net').AddressInfo).port}/ops`);
      await page.waitForSelector('body[data-state="ready"]');
      expect(await page.textContent('section.flow[data-flow="pay"] table.steps tbody td')).toBe(hostile);
      expect(await page.textContent('section.flow[data-flow="pay"] .flow-dropoff')).toContain(hostile);
      expect(await page.$$('main img')).toHaveLength(0);
      expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();
      expect(await page.textContent('#queue-depth')).toBe('unknown');
    } finally {
      await page.close();
      listening.close();
    }
  });
});
