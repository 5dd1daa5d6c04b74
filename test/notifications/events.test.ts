import { describe, expect, it } from 'vitest';
import { deliveryFor, parseChat, notificationBody, requestOfCollection } from '../../src/notifications/events.js';
import { notifyMessages } from '../../src/notifications/messages.js';

const hook = (event: string) => ({ id: 1, event, target: 'https://x.test/notifications/momo' });
const payment = (state: string, extra: Record<string, unknown> = {}) =>
  notificationBody.parse({
    hook: hook('payment.status.changed'),
    data: {
      id: 42,
      state,
      amount: '1500.00',
      currency: 'UGX',
      metadata: { chat: 'telegram:777', ref: 'run1:pay' },
      phone_nos: [{ phonenumber: '+256772000001', amount: '1500.00', state: 'complete' }],
      ...extra,
    },
  });

describe('parseChat', () => {
  it('splits on the first colon only, so Slack team:user ids survive', () => {
    expect(parseChat('slack:T1:U2')).toEqual({ channel: 'slack', conversationId: 'T1:U2' });
    expect(parseChat('ussd:+256772000001')).toEqual({ channel: 'ussd', conversationId: '+256772000001' });
    expect(parseChat('whatsapp:256772000001')).toEqual({ channel: 'whatsapp', conversationId: '256772000001' });
  });
  it('refuses unknown channels and empty parts', () => {
    expect(parseChat('email:a@b')).toBeNull();
    expect(parseChat('telegram:')).toBeNull();
    expect(parseChat(':123')).toBeNull();
    expect(parseChat(12)).toBeNull();
  });
});

describe('deliveryFor', () => {
  it('routes a payment state change by its metadata chat', () => {
    const d = deliveryFor(payment('processed'))!;
    expect(d.address).toEqual({ channel: 'telegram', conversationId: '777' });
    expect(d.messageKey).toBe('notify.payment.processed');
    expect(d.dedupKey).toBe('payment:42:processed');
    expect(d.params).toMatchObject({ amount: '1500.00', currency: 'UGX', phone: '+256772000001', ref: '42' });
  });

  it('reads metadata given as a JSON string and phone_nos as bare numbers (before v5)', () => {
    const d = deliveryFor(payment('rejected', { metadata: JSON.stringify({ chat: 'slack:T:U' }), phone_nos: ['+254700000001'], rejected_reason: 'Over budget' }))!;
    expect(d.address).toEqual({ channel: 'slack', conversationId: 'T:U' });
    expect(d.params.reason).toBe('Over budget');
    expect(d.params.phone).toBe('+254700000001');
  });

  it('ranks terminal states above open ones, and treats the sample state completed as processed', () => {
    expect(deliveryFor(payment('validated'))!.rank).toBeLessThan(deliveryFor(payment('processed'))!.rank);
    expect(deliveryFor(payment('completed'))!.dedupKey).toBe('payment:42:processed');
  });

  it('owes nothing for new payments, payments without a chat, or malformed data', () => {
    expect(deliveryFor(payment('new'))).toBeNull();
    expect(deliveryFor(payment('processed', { metadata: null }))).toBeNull();
    expect(deliveryFor(notificationBody.parse({ hook: hook('payment.status.changed'), data: { nothing: true } }))).toBeNull();
    expect(deliveryFor(notificationBody.parse({ hook: hook('contact.created'), data: { id: 1 } }))).toBeNull();
  });

  it('pushes collection request outcomes, not their open states', () => {
    const req = (status: string) =>
      notificationBody.parse({
        hook: hook('collectionrequest.status.changed'),
        data: { id: 9, status, amount: '500', currency: 'KES', phonenumber: '+254700000002', metadata: { chat: 'ussd:+254700000003' } },
      });
    expect(deliveryFor(req('pending'))).toBeNull();
    expect(deliveryFor(req('instructions_sent'))).toBeNull();
    expect(deliveryFor(req('processing_started'))).toBeNull();
    expect(deliveryFor(req('expired'))).toMatchObject({ messageKey: 'notify.request.expired', forUssd: true, params: { ref: '9' } });
    expect(deliveryFor(req('reversed'))!.rank).toBeGreaterThan(deliveryFor(req('successful'))!.rank);
    expect(deliveryFor(req('successful'))!.address).toEqual({ channel: 'ussd', conversationId: '+254700000003' });
  });

  it('routes a received collection through its matched request', () => {
    const d = deliveryFor(
      notificationBody.parse({
        hook: hook('collection.received'),
        data: {
          id: 5,
          amount: '500',
          currency: 'KES',
          phonenumber: '+254700000002',
          reference: 'rent',
          contact: { first_name: 'Amina', last_name: 'Otieno' },
          collection_request: { id: 9, status: 'successful', metadata: { chat: 'telegram:1' } },
        },
      }),
    )!;
    expect(d.address).toEqual({ channel: 'telegram', conversationId: '1' });
    expect(d.params.name).toBe(' (Amina Otieno)');
    // Before v3 the request is only an id: the chat comes from our record of it, or nothing is owed.
    const old = notificationBody.parse({
      hook: hook('collection.received'),
      data: { id: 5, amount: '500.00', currency: 'KES', phonenumber: '+254700000002', status: 'successful', collection_request: 9 },
    });
    expect(deliveryFor(old)).toBeNull();
    expect(requestOfCollection(old)).toEqual({ id: '9', phonenumber: '+254700000002', amount: '500.00', currency: 'KES' });
    expect(deliveryFor(old, 'slack:T1:U1')!.address).toEqual({ channel: 'slack', conversationId: 'T1:U1' });
    // A collection that failed or was reversed is told by its request's own change, not twice.
    expect(deliveryFor(notificationBody.parse({ ...old, data: { ...old.data, status: 'reversed' } }), 'slack:T1:U1')).toBeNull();
  });

  it('tells approval needed in every channel (someone must act), the steps on the way only in chats', () => {
    const ussd = { metadata: { chat: 'ussd:+256772000009' } };
    expect(deliveryFor(payment('approval_needed', ussd))).toMatchObject({ forUssd: true, messageKey: 'notify.payment.approval_needed' });
    expect(notifyMessages.en['notify.payment.approval_needed']).toMatch(/approver/);
    expect(deliveryFor(payment('approval_requested', ussd))).toMatchObject({ forUssd: false });
    expect(deliveryFor(payment('validated', ussd))).toMatchObject({ forUssd: false });
    for (const state of ['processed', 'processed_with_errors', 'rejected', 'cancelled']) expect(deliveryFor(payment(state, ussd))!.forUssd).toBe(true);
    expect(deliveryFor(payment('cancelled', { cancelled_reason: 'Wrong number' }))!.params.reason).toBe('Wrong number');
  });

  it('tells a transfer the network holds while the payment is approved, between its open states and its outcome', () => {
    const held = (state: string) =>
      payment('approved', { paused_reason: state === 'paused' ? 'Network down' : null, phone_nos: [{ phonenumber: '+256772000006', state, amount: '1500.00' }] });
    const paused = deliveryFor(held('paused'))!;
    expect(paused).toMatchObject({ messageKey: 'notify.payment.recipient.paused', dedupKey: 'payment:42:recipient:paused', forUssd: false });
    expect(paused.params.reason).toBe('Network down');
    expect(paused.rank).toBeGreaterThan(deliveryFor(payment('approved'))!.rank);
    expect(paused.rank).toBeLessThan(deliveryFor(payment('processed'))!.rank);
    expect(deliveryFor(held('paused_for_admin_action'))).toMatchObject({ forUssd: true, messageKey: 'notify.payment.recipient.paused_for_admin_action' });
    for (const state of ['queued', 'parked']) expect(deliveryFor(held(state))!.messageKey).toBe(`notify.payment.recipient.${state}`);
    // A recipient still processing: the payment's own state is told.
    expect(deliveryFor(held('processing'))!.messageKey).toBe('notify.payment.approved');
  });
});
