/**
 * A phone on the Africa's Talking protocol, for the terminal simulator and tests: dial() opens a session
 * with a fresh sessionId, answer() posts every answer so far joined by `*`, as the gateway does.
 */
import { randomBytes } from 'node:crypto';

export interface DialerOptions {
  /** Base URL of the product, e.g. http://localhost:3000. */
  url: string;
  /** The phone number dialling, international `+` form. */
  phone: string;
  /** The service code sent with each request. */
  serviceCode: string;
  /** USSD_CALLBACK_TOKEN of the product, when it has one: posts to `/ussd/africastalking/<token>`. */
  token?: string;
}

export interface UssdScreen {
  text: string;
  /** The service ended the session (END). */
  final: boolean;
}

export interface Dialer {
  dial(): Promise<UssdScreen>;
  answer(answer: string): Promise<UssdScreen>;
}

export function createDialer(options: DialerOptions): Dialer {
  const endpoint = new URL(
    `/ussd/africastalking${options.token ? `/${encodeURIComponent(options.token)}` : ''}`,
    options.url,
  );
  let sessionId = '';
  let answers: string[] = [];

  async function post(): Promise<UssdScreen> {
    const body = new URLSearchParams({
      sessionId,
      serviceCode: options.serviceCode,
      phoneNumber: options.phone,
      networkCode: '99999',
      text: answers.join('*'),
    });
    const res = await fetch(endpoint, { method: 'POST', body });
    const reply = await res.text();
    if (!res.ok) throw new Error(`USSD endpoint answered ${res.status}: ${reply}`);
    const match = /^(CON|END) ([\s\S]*)$/.exec(reply);
    if (!match) throw new Error('USSD endpoint answered neither CON nor END');
    return { text: match[2] ?? '', final: match[1] === 'END' };
  }

  return {
    dial() {
      sessionId = `CLI${randomBytes(10).toString('hex')}`;
      answers = [];
      return post();
    },
    answer(answer) {
      if (!sessionId) throw new Error('dial first');
      answers.push(answer);
      return post();
    },
  };
}
