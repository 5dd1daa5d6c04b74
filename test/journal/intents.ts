/** The journal tests' one payment intent: a USSD payment of 1,500.50 UGX, with `over` changing any field. */
import type { Intent } from '../../src/journal/journal.js';

export const anIntent = (ref: string, over: Partial<Intent> = {}): Intent => ({
  ref,
  kind: 'payment',
  amount: '1500.50',
  currency: 'UGX',
  payee: '+256772000001',
  channel: 'ussd',
  channelUser: '+256772999001',
  chat: 'ussd:+256772999001',
  role: 'staff',
  flow: 'pay',
  at: new Date('2026-11-20T10:00:00Z'),
  ...over,
});
