/**
 * Names every JS object has (`__proto__`, `constructor`, `valueOf`...) arriving from outside: a notice's state,
 * a recipient's status, a request's path, a WhatsApp message, a field of the service's 400, a form field's name,
 * an `ordering`. Each must be treated as the plain string it is, never as a key that finds Object.prototype's
 * members: there, a state ranked as a function, a message was dropped, a field vanished, the process was polluted.
 */
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { payoutMessage } from '../../adapters/slack/payout.js';
import { readMessage } from '../../adapters/whatsapp/inbound.js';
import type { IncomingMessage as WhatsAppMessage } from '../../adapters/whatsapp/payload.js';
import type { Made } from '../../src/conversation/calls/made-records.js';
import { ValidationError, errorFromResponse } from '../../src/momo/errors.js';
import { deliveryFor, marksOf, notificationBody, parseNotice, type Notice } from '../../src/notifications/events.js';
import { createMetrics } from '../../src/ops/metrics.js';
import type { Payout } from '../../src/payouts/payouts.js';
import { mergeStates } from '../../src/payouts/recipients.js';
import { foldFormFields } from '../../src/sandbox/body.js';
import { textMessage } from '../adapters/whatsapp/deliveries.js';
import { startSandbox, type RunningSandbox } from '../sandbox/harness.js';

const HOSTILE = ['__proto__', 'constructor', 'valueOf', 'toString', 'hasOwnProperty', 'isPrototypeOf'];
/** A name no table holds: each hostile name must be read as this one is. */
const UNKNOWN = 'foo';

const PHONE = '+256772000001';
const ourPayment: Made = {
  kind: 'payment',
  ref: 'run1:pay',
  chat: 'ussd:+256700000001',
  amount: '1500',
  currency: 'UGX',
  payee: PHONE,
  created: 0,
  id: '42',
  accepted: true,
};
const ourRequest: Made = {
  kind: 'request',
  ref: 'run2:request',
  chat: 'telegram:1',
  amount: '500',
  currency: 'KES',
  payee: PHONE,
  created: 0,
  id: '9',
  accepted: true,
};

const notice = (event: string, data: Record<string, unknown>): Notice => {
  const parsed = parseNotice(
    notificationBody.parse({ hook: { id: 1, event, target: 'https://x.test/notifications/momo' }, data }),
  );
  if (!parsed.ok || !parsed.notice) throw new Error(`no notice: ${JSON.stringify(parsed)}`);
  return parsed.notice;
};
const payment = (state: string) => notice('payment.status.changed', { id: 42, state, amount: '1500', currency: 'UGX' });
const request = (status: string) =>
  notice('collectionrequest.status.changed', { id: 9, status, amount: '500', currency: 'KES', phonenumber: PHONE });

const RECIPIENT = { phonenumber: PHONE, amount: '500', description: 'Wages' };
const reported = (state: string) => [{ phone: PHONE, state, error: '' }];
/** A confirmed payout of one recipient, whose state the service reported as `state`. */
const payout = (state: string): Payout => ({
  id: 'p1',
  maker: { channel: 'slack', userId: 'UMAKER', chat: 'slack:T1:UMAKER' },
  currency: 'UGX',
  state: 'confirmed',
  requests: [
    {
      key: 'k1',
      recipients: [RECIPIENT],
      total: '500',
      result: { kind: 'sent', id: '7', state: 'approved' },
      states: [{ state }],
    },
  ],
  needsApproval: false,
  limits: {},
});

const CONTACT = { phone_number: PHONE, first_name: 'Sarah', last_name: 'Nakato' };
let sb: RunningSandbox;
beforeAll(async () => {
  sb = await startSandbox();
  // A list to order: `ordering` is checked against the fields of its first record.
  await sb.api('POST', '/contacts', { json: CONTACT });
});
afterAll(async () => {
  await sb.close();
});

describe('names every object has, arriving from outside', () => {
  it('ranks a notice in such a state as an unknown state, and tells a request in one as any other state', () => {
    const unknownRank = marksOf(ourPayment, payment(UNKNOWN)).rank;
    expect(deliveryFor(ourRequest, request(UNKNOWN))?.messageKey).toBe('notify.request.other');
    for (const name of HOSTILE) {
      expect(marksOf(ourPayment, payment(name)).rank, name).toBe(unknownRank);
      expect(deliveryFor(ourRequest, request(name))?.messageKey, name).toBe('notify.request.other');
    }
  });

  it('never moves a recipient back from such a state to an older one', () => {
    for (const name of [UNKNOWN, ...HOSTILE]) {
      const taken = mergeStates([RECIPIENT], undefined, reported(name));
      expect(taken, name).toEqual([{ state: name }]);
      expect(mergeStates([RECIPIENT], taken!, reported('new')), name).toBeNull();
    }
  });

  it('shows such a recipient status in its own words in the payout message', () => {
    for (const name of HOSTILE) {
      const words = JSON.stringify(payoutMessage(payout(name)));
      expect(words, name).toContain(`— ${name.replace(/_/g, ' ')}`);
      expect(words, name).not.toMatch(/native code|\[object Object\]/);
    }
  });

  it('counts a request whose path starts with such a name under the channel "other"', async () => {
    const metrics = createMetrics();
    const urls = HOSTILE.flatMap((name) => [`/${name}`, `/${name}/x?y=1`]);
    for (const url of urls) {
      const res = Object.assign(new EventEmitter(), { statusCode: 200 }) as unknown as ServerResponse;
      metrics.http({ url } as IncomingMessage, res, () => res.emit('finish'));
    }
    const counted = (await metrics.registry.getSingleMetric('momo_http_requests_total')!.get()).values;
    expect(counted.map((v) => [v.labels.channel, v.value])).toEqual([['other', urls.length]]);
  });

  it('hands a WhatsApp message of such a word to the flow as an answer', () => {
    // Typed words are lowercased before the tables are read: only the names all in lowercase could reach them.
    for (const name of HOSTILE.filter((n) => n === n.toLowerCase())) {
      for (const text of [name, `/${name}`]) {
        expect(readMessage(textMessage(PHONE, text) as WhatsAppMessage, undefined), text).toEqual({
          kind: 'engine',
          request: { text },
        });
      }
    }
  });

  it("keeps every field of the service's 400, `__proto__` included", () => {
    // As the answer's JSON reads: JSON.parse makes `__proto__` an own key like any other.
    const body: unknown = JSON.parse(`{${HOSTILE.map((name) => `"${name}": ["${name} is wrong."]`).join(', ')}}`);
    const error = errorFromResponse(400, body, new Headers());
    expect(error).toBeInstanceOf(ValidationError);
    expect(Object.keys((error as ValidationError).fields)).toEqual(HOSTILE);
    for (const name of HOSTILE) expect(error.message).toContain(`${name}: ${name} is wrong.`);
  });

  it('refuses a form field with a `__proto__` part (400), and folds `constructor.x` into an own object', async () => {
    try {
      for (const name of ['__proto__.polluted', 'metadata.__proto__']) {
        const res = await sb.api('POST', '/contacts', { form: { ...CONTACT, [name]: 'yes' } });
        expect(({} as Record<string, unknown>).polluted, name).toBeUndefined();
        expect(res.status, name).toBe(400);
        expect(Object.keys(res.body), name).toEqual(['non_field_errors']);
      }
    } finally {
      // Should the attempt have polluted the process, the other tests are not to pay for it.
      delete (Object.prototype as Record<string, unknown>).polluted;
    }
    expect(foldFormFields([['constructor.x', '1']])).toEqual({ constructor: { x: '1' } });
    expect(Object.hasOwn(Object, 'x')).toBe(false);
  });

  it('refuses ordering a list by such a name, as by a field the records do not have', async () => {
    for (const name of HOSTILE) {
      for (const ordering of [name, `-${name}`]) {
        const res = await sb.api('GET', `/contacts?ordering=${encodeURIComponent(ordering)}`);
        expect(res.status, ordering).toBe(400);
        expect(res.body, ordering).toEqual({ ordering: [`Unknown field "${name}".`] });
      }
    }
  });
});
