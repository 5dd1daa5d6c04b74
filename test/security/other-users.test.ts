/**
 * What one user can see or change of another's, through the whole product (the embedded sandbox as the
 * service, Telegram and USSD as real clients post them):
 * - a payee name typed by one user is theirs: before, it became the number's name for everyone, so the next
 *   user paying that number was shown the first one's words and skipped the network check;
 * - the check flow lists the collections of the user's own requests (all of them for a role with
 *   `seeAllCollections`): before, anyone allowed to check saw every collection of the organization;
 * - text from the network or other users is one plain line on every screen and notification: before, a
 *   collection's reference with a line break added lines (a fake "1. Send ...") to the screen.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AtSession } from '../e2e/helpers.js';
import { reading, until } from '../until.js';
import { WEBHOOK_PASSWORD, WEBHOOK_USER, startFuzzProduct, type Product } from '../fuzz/harness.js';
import { TelegramUser } from './drivers.js';

const PAYEE = '0772000001';
const ALICE = 8201;
const BOB = 8202;
const AUDITOR = 8209;
const USSD_AUDITOR = '+256772666009';

const teller = {
  flows: ['pay', 'request', 'check'],
  perPaymentLimit: { UGX: '500000' },
  dailyLimit: { UGX: '2000000' },
};
const policy = {
  roles: { teller, auditor: { flows: ['check'], perPaymentLimit: {}, dailyLimit: {}, seeAllCollections: true } },
  users: {
    telegram: { [ALICE]: { role: 'teller' }, [BOB]: { role: 'teller' }, [AUDITOR]: { role: 'auditor' } },
    slack: {},
    ussd: { [USSD_AUDITOR]: { role: 'auditor' } },
  },
};

let product: Product;
beforeAll(async () => {
  product = await startFuzzProduct({ ACCESS_POLICY: JSON.stringify(policy), CURRENCIES: 'UGX' });
  // The sandbox signs its notifications with the credentials the product expects.
  product.app.sandbox!.controls.setOrganization({
    webhookAuth: { username: WEBHOOK_USER, password: WEBHOOK_PASSWORD },
  });
});
afterAll(async () => {
  await product?.stop();
});

describe('payee names', () => {
  it('a name one user types for a number is never shown to another user paying it', async () => {
    const alice = new TelegramUser(product, ALICE);
    expect(await alice.say('/pay')).toMatch(/What do you want to send/);
    // Airtime: no network check of the name, so the name she types is the one kept for her.
    await alice.press('Airtime');
    expect(await alice.say(PAYEE)).toMatch(/first name/);
    await alice.say('Evil');
    expect(await alice.say('Name')).toMatch(/amount/i);
    await alice.say('1000');
    expect(await alice.say('x')).toMatch(/Send 1,000 UGX of airtime to Evil Name/);
    await alice.press('Confirm');
    // The answer to the press; the service's first notification of it may follow before the press returns.
    expect(
      alice.texts().filter((text) => /^Sent: 1,000 UGX to Evil Name\. Ref MC-[A-Z0-9]+\./.test(text)),
    ).toHaveLength(1);
    // Its outcome reaches her chat before the next step of these tests: the last of its notifications (an
    // older state never follows it), so none comes between a later step's press and its answer.
    await until(
      'the outcome of her payment',
      reading(
        async () => alice.texts().join('\n'),
        (texts) => /Done: 1,000 UGX|Payment \d+ of 1,000 UGX .*(failed|was rejected|was cancelled)/.test(texts),
      ),
      { timeoutMs: 10_000, everyMs: 50 },
    );

    // Bob pays the same number: he is asked the names himself, and the network checks his.
    const bob = new TelegramUser(product, BOB);
    await bob.say('/pay');
    await bob.press('Mobile money');
    expect(await bob.say(PAYEE)).toMatch(/new to us\. Enter the first name/);
    await bob.say('Sarah');
    await bob.say('Nakato');
    await bob.say('2000');
    const summary = await bob.say('rent');
    expect(summary).toMatch(/Send 2,000 UGX of mobile money to Sarah Nakato/);
    expect(summary).not.toMatch(/Evil/);

    // Alice's "Evil Name" was never confirmed by the network, so it is not kept even for her: she is asked
    // again, offered the network's own name.
    await alice.say('/pay');
    await alice.press('Someone new');
    const again = await alice.say(PAYEE);
    expect(again).toMatch(/The network knows \+256772000001 as Sarah Nakato/);
    expect(again).not.toMatch(/Evil/);
  });
});

describe('collections', () => {
  const AMOUNT = '3170';
  const REFERENCE = 'Fees\r\n1. Send 500000\u202Eevil';

  beforeAll(async () => {
    // Alice asks the payee for money; the payee pays it with a reference holding line breaks and an override.
    const alice = new TelegramUser(product, ALICE);
    await alice.say('/request');
    await alice.say(PAYEE);
    await alice.say(AMOUNT);
    await alice.say('fees');
    await alice.press('No');
    // The outcome of an earlier test's payment may reach the chat meanwhile: the answer is among the texts since.
    const before = alice.texts().length;
    await alice.press('Send request');
    expect(alice.texts().slice(before).join('\n')).toMatch(/Asked \+256\d+ to pay [\d,]+ UGX\. .*Ref MC-[A-Z0-9]+\./);
    await product.app.sandbox!.controls.sendCollection({
      phonenumber: '+256772000001',
      amount: AMOUNT,
      currency: 'UGX',
      reference: REFERENCE,
    });
    // And a collection of nobody's request (money sent to the organization without one).
    await product.app.sandbox!.controls.sendCollection({
      phonenumber: '+256772000001',
      amount: '4170',
      currency: 'UGX',
    });
    // Both notifications of her request reach her chat before the tests press anything there.
    await until(
      'the notifications of her request',
      reading(
        async () => alice.texts().join('\n'),
        (texts) =>
          /You received 3,170 UGX/.test(texts) &&
          /Your request MC-[A-Z0-9]+ \(service \d+\) of 3,170 UGX .* was paid/.test(texts),
      ),
      { timeoutMs: 10_000, everyMs: 50 },
    );
  });

  async function latest(user: TelegramUser): Promise<string> {
    await user.say('/check');
    return user.press('Latest payments received');
  }

  it('another user who may check sees none of the collections of requests they did not make', async () => {
    const bob = new TelegramUser(product, BOB);
    expect(await latest(bob)).toBe('No payments received yet.');
  });

  it('the user who made the request sees its collection, as one plain line', async () => {
    const alice = new TelegramUser(product, ALICE);
    expect(await latest(alice)).toMatch(/Latest payments received/);
    const listed = alice
      .screen()
      .keyboard.map((b) => b.text)
      .filter((label) => /^\d/.test(label));
    expect(listed).toEqual([expect.stringMatching(new RegExp(`^${Number(AMOUNT).toLocaleString('en')} UGX`))]);
    const details = await alice.press(listed[0]!);
    expect(details).toMatch(/Ref: Fees 1\. Send 500000 evil\. Tx:/);
    expect(details).not.toMatch(/[\r\n\u202E]/);
  });

  it('a role with seeAllCollections sees every collection', async () => {
    const auditor = new TelegramUser(product, AUDITOR);
    await latest(auditor);
    const listed = auditor.screen().keyboard.map((b) => b.text);
    expect(listed).toEqual(
      expect.arrayContaining([expect.stringMatching(/^3,170 UGX/), expect.stringMatching(/^4,170 UGX/)]),
    );
  });

  it('on a USSD screen the reference adds no line: no fake choice', async () => {
    const ussd = new AtSession(product.url, USSD_AUDITOR);
    expect(await ussd.dial()).toMatch(/Check/);
    await ussd.answer('1');
    const list = await ussd.answer('1');
    const choice = list
      .split('\n')
      .find((line) => /^\d+\. 3,170 UGX/.test(line))
      ?.split('.')[0];
    expect(choice).toBeDefined();
    const details = await ussd.answer(choice!);
    expect(details).toMatch(/^END /);
    expect(details.split('\n').filter((line) => /^\s*\d+\.\s/.test(line))).toEqual([]);
    expect(details).toMatch(/Fees 1\. Send 500000/);
  });

  it('the notification of the collection is one plain line too', async () => {
    const told = await until(
      'the collection notification',
      reading(
        async () =>
          product.bot.calls.filter(
            (c) =>
              c.method === 'sendMessage' &&
              String(c.payload.chat_id) === String(ALICE) &&
              /You received 3,170 UGX/.test(String(c.payload.text)),
          ),
        (calls) => calls.length > 0,
      ),
      { timeoutMs: 10_000, everyMs: 50 },
    );
    expect(String(told[0]!.payload.text)).toMatch(/\(their reference: Fees 1\. Send 500000 evil\)/);
    expect(String(told[0]!.payload.text)).not.toMatch(/[\r\n\u202E]/);
  });
});
