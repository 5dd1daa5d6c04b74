import { describe, expect, it } from 'vitest';
import type { Made } from '../../src/conversation/calls/made-records.js';
import {
  deliveryFor,
  isFinal,
  notificationBody,
  parseChat,
  parseNotice,
  type Notice,
} from '../../src/notifications/events.js';
import { notifyMessages, notifyText } from '../../src/notifications/messages.js';

const hook = (event: string) => ({ id: 1, event, target: 'https://x.test/notifications/momo' });
const notice = (event: string, data: Record<string, unknown>): Notice => {
  const parsed = parseNotice(notificationBody.parse({ hook: hook(event), data }));
  if (!parsed.ok || !parsed.notice) throw new Error(`no notice: ${JSON.stringify(parsed)}`);
  return parsed.notice;
};
const payment = (state: string, extra: Record<string, unknown> = {}) =>
  notice('payment.status.changed', {
    id: 42,
    state,
    amount: '1500.00',
    currency: 'UGX',
    metadata: { chat: 'telegram:777', ref: 'run1:pay' },
    phone_nos: [{ phonenumber: '+256772000001', amount: '1500.00', state: 'complete' }],
    ...extra,
  });

/** Our record of payment 42 (its chat and words are ours, not the body's). */
const ourPayment: Made = {
  kind: 'payment',
  ref: 'run1:pay',
  chat: 'ussd:+256700000001',
  amount: '1500',
  currency: 'UGX',
  payee: '+256772000009',
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
  payee: '+254700000002',
  created: 0,
  id: '9',
  accepted: true,
};

describe('parseChat', () => {
  it('splits on the first colon only, so Slack team:user ids survive', () => {
    expect(parseChat('slack:T1:U2')).toEqual({ channel: 'slack', conversationId: 'T1:U2' });
    expect(parseChat('ussd:+256772000001')).toEqual({ channel: 'ussd', conversationId: '+256772000001' });
  });
  it('refuses unknown channels and empty parts', () => {
    expect(parseChat('email:a@b')).toBeNull();
    expect(parseChat('telegram:')).toBeNull();
    expect(parseChat(':123')).toBeNull();
    expect(parseChat(12)).toBeNull();
  });
});

describe('parseNotice', () => {
  it('keeps the parsed fields of a payment: id, state, reason, the body ref', () => {
    expect(payment('rejected', { rejected_reason: 'Over budget' })).toEqual({
      kind: 'payment',
      id: '42',
      state: 'rejected',
      amount: '1500.00',
      currency: 'UGX',
      phone: '+256772000001',
      reason: 'Over budget',
      ref: 'run1:pay',
      recipients: [{ phone: '+256772000001', state: 'complete', error: '' }],
    });
  });

  it("keeps each recipient's number, state and error (v5 phone_nos), bounded; bare numbers (before v5) name no states", () => {
    const n = payment('processed_with_errors', {
      phone_nos: [
        { phonenumber: '+256772000001', state: 'complete', amount: '999999' },
        { phonenumber: '+256772000004', state: 'error', last_error: 'x'.repeat(500) },
      ],
    });
    expect(n?.recipients).toEqual([
      { phone: '+256772000001', state: 'complete', error: '' },
      { phone: '+256772000004', state: 'error', error: 'x'.repeat(200) },
    ]);
    expect(payment('processed', { phone_nos: ['+254700000001'] })?.recipients).toBeUndefined();
  });

  it('reads metadata given as a JSON string, phone_nos as bare numbers (before v5) and the sample state completed', () => {
    const n = payment('completed', { metadata: JSON.stringify({ ref: 'r9' }), phone_nos: ['+254700000001'] });
    expect(n).toMatchObject({ state: 'processed', ref: 'r9', phone: '+254700000001' });
  });

  it("finds a collection's request in the expanded object (v3 and later) or the bare id (before)", () => {
    const data = {
      id: 5,
      amount: '500',
      currency: 'KES',
      phonenumber: '+254700000002',
      reference: 'rent',
      contact: { first_name: 'Amina', last_name: 'Otieno' },
    };
    expect(
      notice('collection.received', { ...data, collection_request: { id: 9, status: 'successful' } }),
    ).toMatchObject({ kind: 'collection', id: '5', requestId: '9', name: 'Amina Otieno', state: 'received' });
    expect(notice('collection.received', { ...data, collection_request: 9 })).toMatchObject({ requestId: '9' });
  });

  it("never names a sender by the service's defaults for an unknown name (Anonymous Contact)", () => {
    const data = { id: 5, amount: '500', currency: 'KES', phonenumber: '+254700000002', reference: 'rent' };
    const named = (first_name?: string, last_name?: string) =>
      notice('collection.received', { ...data, contact: { first_name, last_name } }).name;
    expect(named('Anonymous', 'Contact')).toBe('');
    expect(named('Anonymous', 'Otieno')).toBe('Otieno');
    expect(named('Amina', 'Contact')).toBe('Amina');
    const words = notifyText('en', 'notify.collection.received', {
      amount: '500',
      currency: 'KES',
      phone: '+254700000002',
      name: '',
      reference: 'rent',
      ref: 'MC-7K2QX',
    });
    expect(words).toBe('You received 500 KES from +254700000002 for your request MC-7K2QX (their reference: rent).');
  });

  it('owes nothing for events with no chat message; refuses data it cannot read', () => {
    expect(parseNotice(notificationBody.parse({ hook: hook('contact.created'), data: { id: 1 } }))).toEqual({
      ok: true,
      notice: null,
    });
    const bad = parseNotice(notificationBody.parse({ hook: hook('payment.status.changed'), data: { nothing: true } }));
    expect(bad.ok).toBe(false);
    expect(
      parseNotice(
        notificationBody.parse({
          hook: hook('payment.status.changed'),
          data: { id: 'x'.repeat(65), state: 'processed' },
        }),
      ).ok,
    ).toBe(false);
  });

  it('bounds the texts it keeps', () => {
    expect(payment('rejected', { rejected_reason: 'y'.repeat(5000) }).reason).toHaveLength(200);
  });
});

describe('deliveryFor (our record)', () => {
  it("routes to our record's chat and words it from our record, whatever the body says", () => {
    const d = deliveryFor(ourPayment, payment('processed', { amount: '1500000', metadata: { chat: 'telegram:666' } }))!;
    expect(d.address).toEqual({ channel: 'ussd', conversationId: '+256700000001' });
    expect(d.messageKey).toBe('notify.payment.processed');
    expect(d.params).toMatchObject({ amount: '1500', currency: 'UGX', phone: '+256772000009', ref: '42' });
    expect(d.final).toBe(true);
  });

  it("keys the marks by our kind and ref, not by the body's id", () => {
    const d = deliveryFor(ourPayment, payment('processed'))!;
    expect(d.dedupKey).toBe('payment:run1:pay:processed');
    expect(d.orderKey).toBe('payment:run1:pay');
    expect(deliveryFor(ourPayment, payment('validated'))!.rank).toBeLessThan(d.rank);
  });

  it('owes nothing for the creation itself or an unreachable chat', () => {
    expect(deliveryFor(ourPayment, payment('new'))).toBeNull();
    expect(deliveryFor({ ...ourPayment, chat: 'nowhere:1' }, payment('processed'))).toBeNull();
  });

  it('pushes collection request outcomes, not their open states', () => {
    const req = (status: string) =>
      notice('collectionrequest.status.changed', {
        id: 9,
        status,
        amount: '500',
        currency: 'KES',
        phonenumber: '+254700000002',
      });
    expect(deliveryFor(ourRequest, req('pending'))).toBeNull();
    expect(deliveryFor(ourRequest, req('instructions_sent'))).toBeNull();
    expect(deliveryFor(ourRequest, req('successful'))!.messageKey).toBe('notify.request.successful');
  });

  it('tells request outcomes and a received collection in the words of our request', () => {
    const req = notice('collectionrequest.status.changed', {
      id: 9,
      status: 'expired',
      amount: '1',
      currency: 'KES',
      phonenumber: '+254700000002',
    });
    expect(deliveryFor(ourRequest, req)).toMatchObject({
      messageKey: 'notify.request.expired',
      final: true,
      orderKey: 'request:run2:request',
    });
    const col = notice('collection.received', {
      id: 5,
      amount: '999',
      currency: 'KES',
      phonenumber: '+254700000002',
      reference: 'rent',
      contact: { first_name: 'Amina' },
      collection_request: 9,
    });
    const d = deliveryFor(ourRequest, col)!;
    expect(d.address).toEqual({ channel: 'telegram', conversationId: '1' });
    expect(d.params).toMatchObject({ amount: '500', currency: 'KES', name: ' (Amina)', reference: 'rent' });
    expect(d.dedupKey).toBe('request:run2:request:collection:5:received');
  });

  it("outcomes are the contract's final states", () => {
    for (const state of ['processed', 'processed_with_errors', 'rejected', 'cancelled'])
      expect(isFinal({ kind: 'payment', state })).toBe(true);
    for (const state of ['successful', 'failed', 'expired', 'reversed'])
      expect(isFinal({ kind: 'request', state })).toBe(true);
    for (const state of ['new', 'approved', 'scheduled', 'odd'])
      expect(isFinal({ kind: 'payment', state })).toBe(false);
    expect(isFinal({ kind: 'request', state: 'pending' })).toBe(false);
  });
});

describe('states that ask someone to act, and transfers the network holds', () => {
  it("tells the service approvers' states in every channel (approval needed, requested, rejected with its reason, cancelled), other steps only in chats", () => {
    expect(deliveryFor(ourPayment, payment('approval_needed'))).toMatchObject({
      forUssd: true,
      messageKey: 'notify.payment.approval_needed',
    });
    expect(notifyMessages.en['notify.payment.approval_needed']).toMatch(/approver/);
    expect(deliveryFor(ourPayment, payment('approval_requested'))).toMatchObject({
      forUssd: true,
      messageKey: 'notify.payment.approval_requested',
    });
    expect(deliveryFor(ourPayment, payment('rejected', { rejected_reason: 'Over budget' }))).toMatchObject({
      forUssd: true,
      params: { reason: 'Over budget' },
    });
    expect(deliveryFor(ourPayment, payment('validated'))).toMatchObject({ forUssd: false });
    for (const state of ['processed', 'processed_with_errors', 'rejected', 'cancelled'])
      expect(deliveryFor(ourPayment, payment(state))!.forUssd).toBe(true);
    expect(deliveryFor(ourPayment, payment('cancelled', { cancelled_reason: 'Wrong number' }))!.params.reason).toBe(
      'Wrong number',
    );
  });

  it('tells a transfer the network holds while the payment is approved, between its open states and its outcome', () => {
    const held = (state: string) =>
      payment('approved', {
        paused_reason: state === 'paused' ? 'Network down' : null,
        phone_nos: [{ phonenumber: '+256772000006', state, amount: '1500.00' }],
      });
    const paused = deliveryFor(ourPayment, held('paused'))!;
    expect(paused).toMatchObject({
      messageKey: 'notify.payment.recipient.paused',
      dedupKey: 'payment:run1:pay:recipient.paused',
      forUssd: false,
    });
    expect(paused.params.reason).toBe('Network down');
    expect(paused.rank).toBeGreaterThan(deliveryFor(ourPayment, payment('approved'))!.rank);
    expect(paused.rank).toBeLessThan(deliveryFor(ourPayment, payment('processed'))!.rank);
    expect(deliveryFor(ourPayment, held('paused_for_admin_action'))).toMatchObject({
      forUssd: true,
      messageKey: 'notify.payment.recipient.paused_for_admin_action',
    });
    for (const state of ['queued', 'parked'])
      expect(deliveryFor(ourPayment, held(state))!.messageKey).toBe(`notify.payment.recipient.${state}`);
    // A recipient still processing: the payment's own state is told.
    expect(deliveryFor(ourPayment, held('processing'))!.messageKey).toBe('notify.payment.approved');
  });

  it('names a request by its id, and tells a collection that failed or was reversed only through its request', () => {
    const req = notice('collectionrequest.status.changed', {
      id: 9,
      status: 'expired',
      amount: '1',
      currency: 'KES',
      phonenumber: '+254700000002',
    });
    expect(deliveryFor(ourRequest, req)!.params.ref).toBe('9');
    const col = (status: string) =>
      notice('collection.received', {
        id: 5,
        status,
        amount: '500',
        currency: 'KES',
        phonenumber: '+254700000002',
        collection_request: 9,
      });
    expect(deliveryFor(ourRequest, col('successful'))).not.toBeNull();
    expect(deliveryFor(ourRequest, col('reversed'))).toBeNull();
    expect(deliveryFor(ourRequest, col('failed'))).toBeNull();
  });
});
