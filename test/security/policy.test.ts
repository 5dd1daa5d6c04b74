/**
 * The access policy in the running product (ACCESS_POLICY JSON): a restricted role is not offered the
 * flows it lacks and is refused them when it asks by command; an unknown user is turned away; per-payment
 * and daily limits refuse with words and move no money; PIN guessing locks after 3 wrong tries, and the
 * lock holds in a new session and against the right PIN.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPin } from '../../src/conversation/calls/access-policy.js';
import { AtSession } from '../e2e/helpers.js';
import { startFuzzProduct, type Product } from '../fuzz/harness.js';
import { TelegramUser } from './drivers.js';

const PIN = '4821';
const VIEWER = '+256772111001';
const TELLER = '+256772111002';
const GUESSER = '+256772111003';
const STRANGER = '+256772111999';

const policy = {
  roles: {
    viewer: { flows: ['check'], perPaymentLimit: { '*': '0' }, dailyLimit: { '*': '0' } },
    teller: { flows: ['pay', 'request', 'check'], perPaymentLimit: { UGX: '10000' }, dailyLimit: { UGX: '15000' } },
  },
  users: {
    telegram: { '7001': { role: 'viewer' }, '7002': { role: 'teller' } },
    slack: {},
    ussd: {
      [VIEWER]: { role: 'viewer', pin: hashPin(PIN) },
      [TELLER]: { role: 'teller', pin: hashPin(PIN) },
      [GUESSER]: { role: 'teller', pin: hashPin(PIN) },
    },
  },
};

let product: Product;
beforeAll(async () => {
  product = await startFuzzProduct({ ACCESS_POLICY: JSON.stringify(policy) });
});
afterAll(async () => {
  await product?.stop();
});

/**
 * Walks the USSD pay flow up to the PIN screen: Sarah Nakato, `amount` UGX (the teller's role pays in UGX only,
 * so no currency is asked; no description is asked either).
 */
async function payUpToPin(ussd: AtSession, amount: string): Promise<string> {
  expect(await ussd.dial()).toMatch(/Pay someone/);
  await ussd.answer('1'); // pay someone
  await ussd.answer('1'); // mobile money
  await ussd.answer('0772000001');
  await ussd.answer('Sarah');
  expect(await ussd.answer('Nakato')).toMatch(/amount/i);
  expect(await ussd.answer(amount)).toMatch(new RegExp(`${Number(amount).toLocaleString('en')} UGX`));
  return ussd.answer('1'); // confirm -> PIN
}

const paymentsTo = () => product.app.sandbox!.controls.payments().length;

describe('roles', () => {
  it('a USSD user whose role only checks collections is not offered paying', async () => {
    const menu = await new AtSession(product.url, VIEWER).dial();
    expect(menu).toMatch(/^CON /);
    expect(menu).toMatch(/Check a payment received/);
    expect(menu).not.toMatch(/Pay someone|Request money|Buy data|exam PIN/);
  });

  it('a Telegram user whose role only checks collections is refused /pay in words, and not offered it', async () => {
    const viewer = new TelegramUser(product, 7001);
    const refused = await viewer.say('/pay');
    expect(refused).toMatch(/not allowed/i);
    const menu = await viewer.say('/start');
    expect(viewer.screen().keyboard.map((b) => b.text)).not.toContain('Pay someone');
    expect(menu).not.toMatch(/Pay someone/);
  });

  it('a user the policy does not know is turned away on every channel', async () => {
    const screen = await new AtSession(product.url, STRANGER).dial();
    expect(screen).toMatch(/^END .*not allowed/);
    expect(await new TelegramUser(product, 7999).say('/pay')).toMatch(/not allowed to use this service/);
  });
});

describe('limits', () => {
  it('refuses a payment above the per-payment limit with words, and moves no money', async () => {
    const before = paymentsTo();
    const ussd = new AtSession(product.url, TELLER);
    expect(await ussd.dial()).toMatch(/Pay someone/);
    for (const answer of ['1', '1', '0772000001', 'Sarah']) await ussd.answer(answer);
    expect(await ussd.answer('Nakato')).toMatch(/amount/i);
    // Refused when the amount is entered, with the figure, before the summary and the PIN.
    const refused = await ussd.answer('20000');
    expect(refused).toMatch(/You can send at most 10,000 UGX in one payment\.\nEnter the amount/);
    expect(paymentsTo()).toBe(before);
    expect(await ussd.answer('00')).toMatch(/Pay someone/);
  });

  it('pays within the limits, then refuses what would pass the daily limit', async () => {
    const before = paymentsTo();
    const first = new AtSession(product.url, TELLER);
    await payUpToPin(first, '10000');
    expect(await first.answer(PIN)).toMatch(/^END Sent: |processing/i);
    expect(paymentsTo()).toBe(before + 1);

    const second = new AtSession(product.url, TELLER);
    expect(await second.dial()).toMatch(/Pay someone/);
    await second.answer('1'); // pay someone
    // Sarah Nakato, paid a moment ago, is listed first: picked, only the amount is asked.
    expect(await second.answer('1')).toMatch(/amount/i);
    expect(await second.answer('6000')).toMatch(/You can send at most 5,000 UGX today \(10,000 already sent\)\./);
    await second.answer('00');
    expect(paymentsTo()).toBe(before + 1);
  });
});

describe('PIN guessing', () => {
  it('locks after 3 wrong PINs; the lock holds in a new session, even for the right PIN', async () => {
    const before = paymentsTo();
    const ussd = new AtSession(product.url, GUESSER);
    await payUpToPin(ussd, '5000');
    expect(await ussd.answer('0000')).toMatch(/Wrong PIN. 2 attempts left/);
    expect(await ussd.answer('1111')).toMatch(/Wrong PIN. 1 attempts? left/);
    expect(await ussd.answer('2222')).toMatch(/PIN is locked/);

    // A new session is told at the amount, before the summary and the PIN: nothing it could type would pay.
    const again = new AtSession(product.url, GUESSER);
    expect(await again.dial()).toMatch(/Pay someone/);
    await again.answer('1'); // pay someone
    await again.answer('1'); // mobile money
    await again.answer('0772000001');
    await again.answer('Sarah');
    await again.answer('Nakato');
    const atAmount = await again.answer('5000');
    expect(atAmount).toMatch(/PIN is locked/);
    expect(atAmount).toMatch(/amount/i);
    expect(paymentsTo()).toBe(before);
  });
});
