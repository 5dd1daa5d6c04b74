/**
 * USSD as people use it (issue 19), over real HTTP with the real engine, flows and sandbox on Redis
 * (TEST_REDIS_URL, a key prefix of its own): dial strings as Africa's Talking and Hubtel send them, a doubled
 * start, a drop and a redial (resume), and a Kiswahili menu's own words.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderPrompt } from '../../../adapters/ussd/renderer.js';
import { resumable, type UssdState } from '../../../adapters/ussd/session.js';
import { addPending } from '../../../src/conversation/channels/ussd-inbox.js';
import { BUNDLES, postAt, postJson, startUssd } from './helpers.js';
import { ONE_CURRENCY_PAYMENT, paymentsOf, startRedisStack } from './stack.js';

let stack: Awaited<ReturnType<typeof startRedisStack>>;
let numbers = 0;
/** A number of its own per test: each has its own conversation. */
const newPhone = () => `+2567721700${String(++numbers).padStart(2, '0')}`;

beforeAll(async () => {
  stack = await startRedisStack('ussd-people');
});
afterAll(async () => {
  await stack?.close();
});

/** One Africa's Talking request of session `sessionId`; the reply's body. */
async function at(sessionId: string, phone: string, text: string): Promise<string> {
  const reply = await postAt(stack.url, {
    sessionId,
    serviceCode: '*384*123#',
    phoneNumber: phone.slice(1),
    networkCode: '63902',
    text,
  });
  expect(reply.status).toBe(200);
  return reply.body;
}

/** The screens a user gets typing `answers` one by one in a new Africa's Talking session. */
async function typed(answers: string[]): Promise<string[]> {
  const phone = newPhone();
  const screens = [await at('TYPED', phone, '')];
  for (let i = 1; i <= answers.length; i++) screens.push(await at('TYPED', phone, answers.slice(0, i).join('*')));
  return screens;
}

/** One Hubtel request as Hubtel posts it. */
async function hubtel(body: { Type: string; SessionId: string; Mobile: string; Message: string; Sequence: number }) {
  const reply = await postJson(stack.url, 'hubtel', { ServiceCode: '384', Operator: 'mtn', ClientState: '', ...body });
  expect(reply.status).toBe(200);
  return reply.json as { Type: string; Message: string };
}

describe('dial strings', () => {
  it("Africa's Talking text=1*1*0772000001 on the first request shows what typing 1, 1, 0772000001 shows", async () => {
    const expected = (await typed(['1', '1', '0772000001'])).at(-1);
    const screen = await at('DIAL-1', newPhone(), '1*1*0772000001');
    expect(screen).toBe(expected);
    expect(screen).toMatch(/^CON .*first name/);
  });

  it('an invalid answer on the way stops there with its usual re-prompt', async () => {
    const expected = (await typed(['1', '1', 'abc'])).at(-1);
    const screen = await at('DIAL-2', newPhone(), '1*1*abc*5000*rent');
    expect(screen).toBe(expected);
    expect(screen).toMatch(/not a phone number/);
  });

  it('never past a confirmation or a PIN: those are typed in the session, and the payment is made once', async () => {
    const phone = newPhone();
    const all = ONE_CURRENCY_PAYMENT.join('*');
    const screen = await at('DIAL-3', phone, all);
    expect(screen).toMatch(/^CON Send 9,000 UGX/);
    expect(screen).toMatch(/1\. Confirm/);
    expect(paymentsOf(stack.sandbox, phone)).toHaveLength(0);
    // The same first request again (a doubled start): the same screen, nothing more.
    expect(await at('DIAL-3', phone, all)).toBe(screen);
    expect(await at('DIAL-3', phone, `${all}*1`)).toMatch(/^CON Enter your PIN/);
    expect(await at('DIAL-3', phone, `${all}*1*1234`)).toMatch(/^END Sent: [\d,]+ UGX to .+\. Ref \S+\./);
    expect(paymentsOf(stack.sandbox, phone)).toHaveLength(1);
  });

  it('stops at a screen that opens with outcomes kept for this dial, and typing on in that session drops them', async () => {
    const phone = newPhone();
    const all = ONE_CURRENCY_PAYMENT.join('*');
    await at('NOTED-1', phone, all);
    await at('NOTED-1', phone, `${all}*1`);
    expect(await at('NOTED-1', phone, `${all}*1*1234`)).toMatch(/^END Sent: [\d,]+ UGX to .+\. Ref \S+\./);
    // The payment's answer is kept for the next dial: a dial string shows it rather than walking past it.
    const screen = await at('NOTED-2', phone, '1*1*0772000001');
    expect(screen).toMatch(/^CON Update on your last request:\nSent: 9,000 UGX to Sarah Nakato\. Ref \S+\./);
    expect(screen).not.toMatch(/first name/);
    // Answering on proves the screen arrived: the next dial does not repeat the note.
    expect(await at('NOTED-2', phone, '1*1*0772000001*1')).toMatch(/Pay whom\?/);
    expect(await at('NOTED-3', phone, '')).not.toMatch(/Update on your last request/);
    expect(paymentsOf(stack.sandbox, phone)).toHaveLength(1);
  });

  it('Hubtel: the dialled string of the initiation walks the same way, and the next Sequence follows on', async () => {
    const phone = newPhone();
    const expected = (await typed(['1', '1'])).at(-1)!.slice(4);
    const first = await hubtel({
      Type: 'Initiation',
      SessionId: 'HUB-DIAL',
      Mobile: phone.slice(1),
      Message: '*384*123*1*1#',
      Sequence: 1,
    });
    expect(first).toMatchObject({ Type: 'response', Message: expected });
    const next = await hubtel({
      Type: 'Response',
      SessionId: 'HUB-DIAL',
      Mobile: phone.slice(1),
      Message: '0772000001',
      Sequence: 2,
    });
    expect(next.Message).toMatch(/first name/);
  });

  it('a dial string that does not start with the service code is a plain dial', async () => {
    const menu = (await typed([]))[0]!.slice(4);
    const first = await hubtel({
      Type: 'initiation',
      SessionId: 'HUB-OTHER',
      Mobile: newPhone().slice(1),
      Message: '*999*1*1#',
      Sequence: 1,
    });
    expect(first.Message).toBe(menu);
  });
});

describe('gateway quirks', () => {
  it('a session start delivered twice (same session id, empty input) shows the same first screen', async () => {
    const phone = newPhone();
    const first = await at('TWICE', phone, '');
    expect(await at('TWICE', phone, '')).toBe(first);
    const hub = newPhone().slice(1);
    const start = { Type: 'initiation', SessionId: 'HUB-TWICE', Mobile: hub, Message: '*384*123#', Sequence: 1 };
    const a = await hubtel(start);
    expect(await hubtel(start)).toEqual(a);
  });
});

describe('a gateway set to send the whole input (USSD_WHOLE_INPUT)', () => {
  it("reads Nalo's every-answer-so-far input as Africa's Talking's: a resend repeats, the next answer steps", async () => {
    const app = await startUssd({ wholeInput: ['nalo'] });
    try {
      const nalo = async (USERDATA: string, MSGTYPE: boolean) => {
        const reply = await postJson(app.url, 'nalo', {
          USERID: 'NALO',
          MSISDN: '256772170090',
          USERDATA,
          MSGTYPE,
          NETWORK: 'MTN',
          SESSIONID: 'NALO-W',
        });
        expect(reply.status).toBe(200);
        return reply.json.MSG as string;
      };
      expect(await nalo('*384*123#', true)).toMatch(/^Welcome to MoMo/);
      expect(await nalo('1', false)).toMatch(/^Enter amount/);
      expect(await nalo('1', false)).toMatch(/^Enter amount/);
      expect(await nalo('1*4500', false)).toMatch(/^Pay 4500 UGX\. Enter PIN/);
      // A dialled string with answers on the start is its answers, joined.
      const other = await postJson(app.url, 'nalo', {
        USERID: 'NALO',
        MSISDN: '256772170091',
        USERDATA: '*384*123*1#',
        MSGTYPE: true,
        NETWORK: 'MTN',
        SESSIONID: 'NALO-X',
      });
      expect(other.json.MSG).toMatch(/^Enter amount/);
      expect(app.payments).toEqual([]);
    } finally {
      await app.close();
    }
  });
});

describe('resume after a drop', () => {
  it('a redial within the window asks to continue; 1 shows the screen left, and the payment goes through once', async () => {
    const phone = newPhone();
    const answers = ['1', '1', '0772000001', 'Sarah'];
    await at('DROP-1', phone, '');
    for (let i = 1; i <= answers.length; i++) await at('DROP-1', phone, answers.slice(0, i).join('*'));
    const left = await at('DROP-1', phone, answers.join('*'));
    expect(left).toMatch(/last name/);
    // The network drops the session; the user dials again: a new session id.
    const question = await at('DROP-2', phone, '');
    // Nothing is behind the question to go back to: no "0 Back 00 Home" (a 0 there would do nothing).
    expect(question).toBe('CON Continue where you left off?\n1. Continue\n2. Start over');
    expect(await at('DROP-2', phone, '1')).toBe(left);
    const rest = ['Nakato', '9000', '1', '1234'];
    let screen = '';
    for (let i = 1; i <= rest.length; i++) screen = await at('DROP-2', phone, ['1', ...rest.slice(0, i)].join('*'));
    expect(screen).toMatch(/^END Sent: [\d,]+ UGX to .+\. Ref \S+\./);
    expect(paymentsOf(stack.sandbox, phone)).toHaveLength(1);
  });

  it('2 starts over at the menu', async () => {
    const phone = newPhone();
    const menu = await at('OVER-1', phone, '');
    await at('OVER-1', phone, '1');
    expect(await at('OVER-2', phone, '')).toMatch(/Continue where you left off/);
    expect(await at('OVER-2', phone, '2')).toBe(menu);
  });

  it('no offer while an outcome is kept for the dial: it is shown first, on the menu', async () => {
    // As after a Redis failover: the record went back to a flow mid-way while the payment's outcome waits.
    const phone = newPhone();
    await at('NOTE-1', phone, '');
    await at('NOTE-1', phone, '1');
    await addPending(stack.store, { channel: 'ussd', conversationId: phone }, 'Done: 5,000 UGX reached Sarah.');
    const next = await at('NOTE-2', phone, '');
    expect(next).not.toMatch(/Continue where you left off/);
    expect(next).toMatch(/Done: 5,000 UGX reached Sarah\.[\s\S]*1\. Pay someone/);
  });

  it('the PIN is asked again on resume: a session dropped at the PIN screen comes back to it', async () => {
    const phone = newPhone();
    const toPin = ONE_CURRENCY_PAYMENT.slice(0, -1);
    const pinScreen = await at('PIN-1', phone, toPin.join('*'));
    expect(pinScreen).toMatch(/Send 9,000/);
    expect(await at('PIN-1', phone, [...toPin, '1'].join('*'))).toMatch(/Enter your PIN/);
    expect(await at('PIN-2', phone, '')).toMatch(/Continue where you left off/);
    expect(await at('PIN-2', phone, '1')).toMatch(/^CON Enter your PIN/);
    expect(await at('PIN-2', phone, '1*1234')).toMatch(/^END Sent: [\d,]+ UGX to .+\. Ref \S+\./);
    expect(paymentsOf(stack.sandbox, phone)).toHaveLength(1);
  });

  it('after the money call was made nothing is resumed: the next dial is the menu, and no second payment', async () => {
    const phone = newPhone();
    expect(await at('PAID-1', phone, ONE_CURRENCY_PAYMENT.slice(0, -1).join('*'))).toMatch(/Send 9,000/);
    await at('PAID-1', phone, [...ONE_CURRENCY_PAYMENT.slice(0, -1), '1'].join('*'));
    expect(await at('PAID-1', phone, [...ONE_CURRENCY_PAYMENT.slice(0, -1), '1', '1234'].join('*'))).toMatch(
      /^END Sent: 9,000 UGX/,
    );
    const next = await at('PAID-2', phone, '');
    expect(next).not.toMatch(/Continue where you left off/);
    expect(next).toMatch(/1\. Pay someone/);
    expect(paymentsOf(stack.sandbox, phone)).toHaveLength(1);
  });

  it('only within USSD_RESUME_SECONDS of the last hop, and never a final screen or an untouched first screen', () => {
    const state: UssdState = {
      gateway: 'africastalking',
      sessionId: 'S',
      hop: 2,
      seenLength: 3,
      seenDigest: 'd',
      prompt: { text: 'Enter the amount:', final: false },
      page: 0,
      at: 1_000_000,
    };
    expect(resumable(state, 1_000_000 + 119_999, 120_000)).toEqual({ prompt: state.prompt, page: 0 });
    expect(resumable(state, 1_000_000 + 120_000, 120_000)).toBeUndefined();
    expect(resumable(state, 1_000_000, 0)).toBeUndefined();
    expect(resumable({ ...state, prompt: { text: 'Paid.', final: true } }, 1_000_001, 120_000)).toBeUndefined();
    expect(resumable({ ...state, hop: 0 }, 1_000_001, 120_000)).toBeUndefined();
    expect(resumable({ ...state, at: undefined }, 1_000_001, 120_000)).toBeUndefined();
  });

  it('Hubtel: a timeout ends the session and leaves it resumable', async () => {
    const phone = newPhone().slice(1);
    const base = { SessionId: 'HUB-T1', Mobile: phone };
    await hubtel({ ...base, Type: 'initiation', Message: '*384*123#', Sequence: 1 });
    const left = await hubtel({ ...base, Type: 'response', Message: '1', Sequence: 2 });
    await hubtel({ ...base, Type: 'timeout', Message: '', Sequence: 3 });
    const question = await hubtel({
      SessionId: 'HUB-T2',
      Mobile: phone,
      Type: 'initiation',
      Message: '*384*123#',
      Sequence: 1,
    });
    expect(question.Message).toMatch(/^Continue where you left off\?\n1\. Continue\n2\. Start over/);
    const back = await hubtel({ SessionId: 'HUB-T2', Mobile: phone, Type: 'response', Message: '1', Sequence: 2 });
    expect(back.Message).toBe(left.Message);
  });
});

describe("menus in the user's language", () => {
  it("the words of paging and navigation come from the catalogue in the prompt's language", () => {
    const long = { text: 'Chagua kifurushi:', choices: BUNDLES, lang: 'sw' as const, final: false };
    const screen = renderPrompt(long, 0);
    expect(screen.text).toMatch(/\n98 Zaidi\n0 Rudi 00 Mwanzo$/);
    expect(renderPrompt({ ...long, lang: undefined }, 0).text).toMatch(/\n98 More\n0 Back 00 Home$/);
  });

  it('"Buy data" and "Exam pin" are offered to a Nigerian number only: the vending group sells there', async () => {
    const ugandan = await at('VEND-UG', newPhone(), '');
    expect(ugandan).not.toMatch(/Buy data|exam PIN/i);
    expect(ugandan).toMatch(/4\. Language/);
    const nigerian = await at('VEND-NG', '+2348031400001', '');
    expect(nigerian).toMatch(/4\. Buy data/);
    expect(nigerian).toMatch(/5\. .*exam PIN/i);
  });

  it('a user who chose Kiswahili reads "0 Rudi 00 Mwanzo" and "98 Zaidi", and the resume question in Kiswahili', async () => {
    const phone = newPhone();
    await at('SW-1', phone, '');
    // A Ugandan number: no vending flows, so Language is the fourth choice.
    await at('SW-1', phone, '4');
    const menu = await at('SW-1', phone, '4*2');
    // The top menu has nothing to go back to: no navigation line there.
    expect(menu).toMatch(/^CON Ungependa kufanya nini\?\n1\. Mlipe mtu/);
    expect(menu).not.toMatch(/Rudi|Mwanzo|Back|Home/);
    const kind = await at('SW-1', phone, '4*2*1');
    expect(kind).toMatch(/\n0 Rudi 00 Mwanzo$/);
    expect(kind).not.toMatch(/Back|Home/);
    await at('SW-3', phone, '');
    await at('SW-3', phone, '1');
    expect(await at('SW-4', phone, '')).toBe('CON Endelea ulipoishia?\n1. Endelea\n2. Anza upya');
  });
});
