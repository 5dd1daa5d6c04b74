import { describe, expect, it } from 'vitest';
import { deliveryFor, parseChat, notificationBody } from '../../src/notifications/events.js';

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
    expect(deliveryFor(req('expired'))!.messageKey).toBe('notify.request.expired');
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
    // Before v3 the request is only an id: no chat can be found, nothing is owed.
    expect(
      deliveryFor(notificationBody.parse({ hook: hook('collection.received'), data: { id: 5, collection_request: 9 } })),
    ).toBeNull();
  });
});
