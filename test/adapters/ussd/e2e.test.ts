/**
 * The USSD channel in the whole product (startApp: the real engine, flows, policy and the embedded
 * sandbox), as `npm start` runs it: a payment completed through the simulator page in headless Chromium,
 * and as a gateway that repeats every request: the payment reaches the sandbox exactly once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import { loadConfig } from '../../../src/config.js';
import { DEMO_BANK_TRANSFER_EMAIL, startApp, type RunningApp } from '../../../src/app.js';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from './chromium.js';
import { postAt, postJson } from './helpers.js';
import { productDatabase } from '../../journal/server-database.js';

/** The demo access policy gives every USSD number this PIN. */
const DEMO_PIN = '1234';
/** A sandbox test number registered as "Sarah Nakato". */
const RECIPIENT = '0772000001';

/** Answers of a whole payment from the main menu, as the flows ask for them. */
const PAYMENT = ['1', '1', RECIPIENT, 'Sarah', 'Nakato', '5000', '1', '1', DEMO_PIN];

let running: RunningApp;
beforeAll(async () => {
  running = await startApp(loadConfig({ ...(await productDatabase()), PORT: '0', LOG_LEVEL: 'silent' }));
});
afterAll(async () => {
  await running?.stop();
});

/** Records the sandbox holds for a conversation (read through its controls: API reads are rate limited). */
function madeBy(phone: string, kind: 'payments' | 'collectionRequests') {
  const records = running.sandbox?.controls[kind]() ?? [];
  return records.filter((r) => (r.metadata as Record<string, unknown> | null)?.chat === `ussd:${phone}`);
}

/** Sends one answer through the simulator page and waits for the next screen. */
async function send(page: Page, answer: string): Promise<string> {
  await page.fill('#answer', answer);
  await page.click('#send');
  await page.waitForSelector('body[data-state="open"], body[data-state="ended"]');
  return (await page.textContent('#screen')) ?? '';
}

describe('USSD end to end (real engine + sandbox)', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
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
      for (const answer of PAYMENT) screens.push(await send(page, answer));
      for (const screen of screens) expect(screen.length).toBeLessThanOrEqual(182);
      expect(screens.at(-2)).toMatch(/Enter your PIN/);
      expect(screens.at(-1)).toMatch(/Sent: [\d,]+ UGX to .+\. Ref MC-[A-Z0-9]+\./);
      expect(await page.getAttribute('body', 'data-state')).toBe('ended');
    } finally {
      await page.close();
    }
    const payments = madeBy(phone, 'payments');
    expect(payments).toHaveLength(1);
    expect(payments[0]).toMatchObject({ amount: '5000.00', currency: 'UGX', description: 'Mobile money payment' });
  });

  it('pays someone paid before in 5 answers after the dial, in the currency they were paid in; a way to another', async () => {
    const phone = '+256772123421';
    const page: Page = await browser.newPage();
    /** Dials, answers `answers` and gives every screen, the dial's first. */
    const session = async (answers: string[]) => {
      await page.goto(`${running.url}/simulator?phone=${encodeURIComponent(phone)}`);
      await page.click('#dial');
      await page.waitForSelector('body[data-state="open"]');
      const screens = [(await page.textContent('#screen')) ?? ''];
      for (const answer of answers) screens.push(await send(page, answer));
      return screens;
    };
    try {
      // First time: a new number, paid in BXC (a Ugandan caller is offered UGX, and the test currency BXC to
      // pay the sandbox's test numbers, as Sarah's is).
      const first = await session(['1', '1', RECIPIENT, 'Sarah', 'Nakato', '500', '2', '1', DEMO_PIN]);
      expect(first[6]).toMatch(/^Choose the currency:\n1\. UGX\n2\. BXC\n/);
      expect(first.at(-1)).toMatch(/Sent: 500 BXC to Sarah Nakato\./);
      // Again: Pay someone, Sarah, the amount (in BXC, named), confirm, PIN.
      const again = await session(['1', '1', '700', '1', DEMO_PIN]);
      expect(again[1]).toMatch(/Pay whom\?\n1\. Sarah Nakato\n/);
      expect(again[2]).toBe('Enter the amount in BXC:\n1. Another currency\n0 Back 00 Home');
      expect(again[3]).toMatch(/^Send 700 BXC of mobile money to Sarah Nakato \(\+256772000001\)\?/);
      expect(again.at(-1)).toMatch(/Sent: 700 BXC to Sarah Nakato\./);
      for (const screen of [...first, ...again]) expect(screen.length).toBeLessThanOrEqual(182);
      // Another currency: one more screen, only when wanted.
      const other = await session(['1', '1', '1']);
      expect(other.at(-1)).toMatch(/^Choose the currency:\n1\. UGX\n2\. BXC\n0 Back/);
      expect(await send(page, '1')).toBe('Enter the amount in UGX:\n1. Another currency\n0 Back 00 Home');
    } finally {
      await page.close();
    }
    const payments = madeBy(phone, 'payments');
    expect(payments.map((p) => [p.amount, p.currency])).toEqual([
      ['500.00', 'BXC'],
      ['700.00', 'BXC'],
    ]);
  });

  it("offers the banks of the number's country, paged the same before and after a wrong key", async () => {
    const page: Page = await browser.newPage();
    const banksOf = async (phone: string) => {
      await page.goto(`${running.url}/simulator?phone=${encodeURIComponent(phone)}`);
      await page.click('#dial');
      await page.waitForSelector('body[data-state="open"]');
      await send(page, '1');
      return [await send(page, '3'), await send(page, '9')] as const;
    };
    try {
      const [ugandan, refused] = await banksOf('+256772123422');
      const listed = (screen: string) => screen.split('\n').filter((line) => /^\d\. /.test(line));
      expect(
        listed(ugandan)
          .map((line) => line.slice(3))
          .sort(),
      ).toEqual(['Centenary Bank', 'Equity Bank Uganda', 'Stanbic Bank Uganda', 'dfcu Bank'].sort());
      expect(ugandan).toMatch(/^Choose the bank:\n[^]*\n0 Back 00 Home$/);
      expect(refused).toBe(`Please pick one of the options.\n${ugandan}`);
      const [kenyan] = await banksOf('+254712123423');
      expect(
        listed(kenyan)
          .map((line) => line.slice(3))
          .sort(),
      ).toEqual(['Co-operative Bank of Kenya', 'Equity Bank Kenya', 'KCB Bank Kenya'].sort());
    } finally {
      await page.close();
    }
  });

  it("a bank transfer whose email is skipped sends the organization's address", async () => {
    const phone = '+256772123424';
    const page: Page = await browser.newPage();
    try {
      await page.goto(`${running.url}/simulator?phone=${encodeURIComponent(phone)}`);
      await page.click('#dial');
      await page.waitForSelector('body[data-state="open"]');
      for (const answer of ['1', '3', '1', '0123456789']) await send(page, answer);
      const email = await send(page, 'Mary Akello');
      expect(email).toBe('Enter an email address for the bank receipt, or skip it:\n1. Skip\n0 Back 00 Home');
      expect(await send(page, '1')).toMatch(/^Enter the phone number/);
      let screen = await send(page, RECIPIENT);
      screen = await send(page, '5000');
      if (screen.startsWith('Choose the currency')) screen = await send(page, '1');
      expect(screen).toMatch(/to Mary Akello, account 0123456789 at /);
      expect(await send(page, '1')).toMatch(/PIN/);
      expect(await send(page, DEMO_PIN)).toMatch(/^Sent: /);
      const [made] = madeBy(phone, 'payments');
      expect(made).toMatchObject({ email: DEMO_BANK_TRANSFER_EMAIL, account_name: 'Mary Akello' });
    } finally {
      await page.close();
    }
  });

  it('dials a dial string, drops the session, takes it up again, and shows the outcome SMS the phone received', async () => {
    const phone = '+256772123419';
    const page: Page = await browser.newPage();
    try {
      await page.goto(`${running.url}/simulator?phone=${encodeURIComponent(phone)}`);
      await page.fill('#code', '*384*123*1*1#');
      await page.click('#dial');
      await page.waitForSelector('body[data-state="open"]');
      expect(await page.textContent('#screen')).toMatch(/phone number of the person to pay/);
      expect(await send(page, RECIPIENT)).toMatch(/first name/);
      await page.click('#drop');
      expect(await page.getAttribute('body', 'data-state')).toBe('ended');
      await page.fill('#code', '*384*123#');
      await page.click('#dial');
      await page.waitForSelector('body[data-state="open"]');
      expect(await page.textContent('#screen')).toMatch(/^Continue where you left off\?\n1\. Continue\n2\. Start over/);
      expect(await send(page, '1')).toMatch(/first name/);
      for (const answer of ['Sarah', 'Nakato', '5000', '1', '1']) await send(page, answer);
      expect(await send(page, DEMO_PIN)).toMatch(/Sent: [\d,]+ UGX to .+\. Ref MC-[A-Z0-9]+\./);
      // The sandbox processes the payment; its notification reaches the product, which texts the outcome.
      await page.waitForSelector('#sms li:has-text("5,000 UGX")', { timeout: 20_000 });
      // Another number with as many messages (the first test's payer, told once): its own are shown, not these.
      const other = '+256772123401';
      const theirs = async () => {
        const res = await fetch(`${running.url}/simulator/sms?phone=${encodeURIComponent(other)}`);
        return ((await res.json()) as { messages: Array<{ text: string }> }).messages.map((m) => m.text);
      };
      await expect.poll(async () => (await theirs()).length, { timeout: 20_000 }).toBe(1);
      const mine = await page.$$eval('#sms li', (items) => items.map((li) => li.textContent));
      expect(mine).toHaveLength(1);
      expect(await theirs()).not.toEqual(mine);
      await page.fill('#phone', other);
      await page.waitForFunction(
        (want) => JSON.stringify(Array.from(document.querySelectorAll('#sms li'), (li) => li.textContent)) === want,
        JSON.stringify(await theirs()),
      );
    } finally {
      await page.close();
    }
    expect(madeBy(phone, 'payments')).toHaveLength(1);
  });
});

describe('USSD end to end with repeated requests', () => {
  it("Africa's Talking: every request sent twice, one payment", async () => {
    const phone = '+256772123402';
    const fields = (text: string) => ({
      sessionId: 'E2E-AT',
      serviceCode: '*384*123#',
      phoneNumber: phone,
      networkCode: '63902',
      text,
    });
    const answers: string[] = [];
    let last = await postAt(running.url, fields(''));
    expect(await postAt(running.url, fields(''))).toEqual(last);
    for (const answer of PAYMENT) {
      answers.push(answer);
      last = await postAt(running.url, fields(answers.join('*')));
      expect(last.status).toBe(200);
      expect(await postAt(running.url, fields(answers.join('*')))).toEqual(last);
    }
    expect(last.body).toMatch(/^END Sent: [\d,]+ UGX to .+\. Ref \S+\./);
    expect(madeBy(phone, 'payments')).toHaveLength(1);
  });

  it('Hubtel: every request sent twice, one payment', async () => {
    const phone = '+256772123403';
    const hop = (Type: string, Sequence: number, Message: string) =>
      postJson(running.url, 'hubtel', {
        Type,
        Mobile: phone.slice(1),
        SessionId: 'E2E-H',
        ServiceCode: '384*123',
        Message,
        Operator: 'mtn',
        Sequence,
      });
    let last = await hop('initiation', 1, '*384*123#');
    expect((await hop('initiation', 1, '*384*123#')).json).toEqual(last.json);
    for (const [i, answer] of PAYMENT.entries()) {
      last = await hop('response', i + 2, answer);
      expect((await hop('response', i + 2, answer)).json).toEqual(last.json);
    }
    expect(last.json).toMatchObject({ Type: 'release' });
    expect(last.json.Message).toMatch(/Sent: [\d,]+ UGX to .+\. Ref MC-[A-Z0-9]+\./);
    expect(madeBy(phone, 'payments')).toHaveLength(1);
  });
});

/** One phone on one gateway: start() dials, answer() sends the latest answer the way that gateway does. */
interface Phone {
  start(): Promise<{ text: string; final: boolean }>;
  answer(answer: string): Promise<{ text: string; final: boolean }>;
}

const GATEWAYS: Record<string, (sessionId: string, phone: string) => Phone> = {
  africastalking(sessionId, phone) {
    const answers: string[] = [];
    const post = async () => {
      const fields = {
        sessionId,
        serviceCode: '*384*123#',
        phoneNumber: phone,
        networkCode: '63902',
        text: answers.join('*'),
      };
      const { body } = await postAt(running.url, fields);
      return { text: body.slice(4), final: body.startsWith('END ') };
    };
    return { start: post, answer: (a) => (answers.push(a), post()) };
  },
  hubtel(sessionId, phone) {
    let sequence = 0;
    const post = async (Type: string, Message: string) => {
      sequence += 1;
      const { json } = await postJson(running.url, 'hubtel', {
        Type,
        Mobile: phone.slice(1),
        SessionId: sessionId,
        ServiceCode: '384*123',
        Message,
        Operator: 'mtn',
        Sequence: sequence,
      });
      return { text: String(json.Message), final: json.Type === 'release' };
    };
    return { start: () => post('initiation', '*384*123#'), answer: (a) => post('response', a) };
  },
  arkesel(sessionId, phone) {
    const post = async (newSession: boolean, userData: string) => {
      const { json } = await postJson(running.url, 'arkesel', {
        sessionID: sessionId,
        userID: 'APP',
        newSession,
        msisdn: phone.slice(1),
        userData,
        network: 'MTN',
      });
      return { text: String(json.message), final: json.continueSession === false };
    };
    return { start: () => post(true, '*384*123#'), answer: (a) => post(false, a) };
  },
  nalo(sessionId, phone) {
    const post = async (MSGTYPE: boolean, USERDATA: string) => {
      const { json } = await postJson(running.url, 'nalo', {
        USERID: 'NALO',
        MSISDN: phone.slice(1),
        USERDATA,
        MSGTYPE,
        NETWORK: 'MTN',
        SESSIONID: sessionId,
      });
      return { text: String(json.MSG), final: json.MSGTYPE === false };
    };
    return { start: () => post(true, '*384*123#'), answer: (a) => post(false, a) };
  },
  beem(sessionId, phone) {
    let requestId = 0;
    const post = async (command: string, response: string) => {
      const { json } = await postJson(running.url, 'beem', {
        command,
        msisdn: phone.slice(1),
        session_id: sessionId,
        operator: 'vodacom',
        payload: { request_id: requestId, response },
      });
      requestId = Number(json.payload.request_id);
      return { text: String(json.payload.request), final: json.command === 'terminate' };
    };
    return { start: () => post('initiate', ''), answer: (a) => post('continue', a) };
  },
};

const purchases = (kind: 'epin' | 'databundle') =>
  (running.sandbox?.controls.purchases() ?? []).filter((x) => x.kind === kind);

/** Each flow's answers from the main menu, its last screen, and how many records it has made so far. */
const FLOWS: Array<{
  name: string;
  nigerian?: boolean;
  answers: string[];
  done: RegExp;
  made: (phone: string) => number;
}> = [
  {
    name: 'pays someone',
    answers: PAYMENT,
    done: /^Sent: 5,000 UGX to .+\. Ref MC-[A-Z0-9]+\./,
    made: (p) => madeBy(p, 'payments').length,
  },
  {
    name: 'requests money',
    answers: ['2', RECIPIENT, '3000', '1', 'dinner', '1', '1'],
    done: /^Asked \+256\d+ to pay 3,000 UGX\. They can pay with code \d+\. Ref MC-[A-Z0-9]+\./,
    made: (p) => madeBy(p, 'collectionRequests').length,
  },
  {
    name: 'buys data',
    nigerian: true,
    answers: ['4', '1', '1', '1', DEMO_PIN],
    done: /^Bought 1GB 1 day for \+234/,
    made: (p) => purchases('databundle').filter((x) => JSON.stringify(x.request).includes(p.slice(4))).length,
  },
  {
    name: 'buys an exam PIN',
    nigerian: true,
    answers: ['5', '1', '1', '1', '1234567890', DEMO_PIN],
    done: /^Bought for ADEBAYO OLUWASEUN TUNDE\. Pins: \d+/,
    made: () => purchases('epin').length,
  },
];

describe('every gateway, every flow that moves money (real engine + sandbox)', () => {
  let n = 0;
  for (const gateway of Object.keys(GATEWAYS)) {
    for (const flow of FLOWS) {
      it(`${gateway}: ${flow.name}, every screen within 182 characters`, async () => {
        n += 1;
        // The vending group sells to Nigerian numbers only: its flows are walked from one.
        const phone = flow.nigerian
          ? `+23480313${String(n).padStart(5, '0')}`
          : `+25677213${String(n).padStart(4, '0')}`;
        const device = GATEWAYS[gateway]!(`E2E-${gateway}-${n}`, phone);
        const before = flow.made(phone);
        const screens = [await device.start()];
        for (const answer of flow.answers) screens.push(await device.answer(answer));
        for (const screen of screens) expect(screen.text.length).toBeLessThanOrEqual(182);
        expect(screens.slice(0, -1).every((s) => !s.final)).toBe(true);
        expect(screens.at(-1)).toMatchObject({ final: true, text: expect.stringMatching(flow.done) });
        expect(flow.made(phone) - before).toBe(1);
      });
    }
  }
});
