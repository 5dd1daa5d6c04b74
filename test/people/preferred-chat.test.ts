/** A USSD outcome is told in the person's preferred chat too, once, whatever repeats the telling. */
import { describe, expect, it } from 'vitest';
import { AccessPolicy, hashPin } from '../../src/conversation/calls/access-policy.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import type { Address, NoteWords, Notifier } from '../../src/conversation/types.js';
import { Directory } from '../../src/people/directory.js';
import { alsoToPreferredChat } from '../../src/people/preferred-chat.js';
import { createLogger } from '../../src/log.js';

const POLICY = {
  roles: { teller: { flows: ['pay'], perPaymentLimit: { UGX: '1000' }, dailyLimit: { UGX: '1000' } } },
  users: {
    ussd: {
      '+256700000001': { role: 'teller', person: 'amina', pin: hashPin('4821') },
      '+256700000002': { role: 'teller', pin: hashPin('4821') },
    },
    telegram: { '42': { role: 'teller', person: 'amina' } },
    slack: {},
    whatsapp: {},
  },
};

describe('alsoToPreferredChat', () => {
  it('tells the preferred chat once, and nobody else', async () => {
    const policy = new AccessPolicy(POLICY);
    const persons = policy.directory
      .persons()
      .map((p) => (p.id === 'amina' ? { ...p, preferredChat: 'telegram:42' } : p));
    policy.useDirectory(new Directory(1, persons, policy.directory.identities(), policy.directory.wildcards));
    const sent: Array<[Address, string]> = [];
    const kept: Array<[Address, string, NoteWords?]> = [];
    const telegram: Notifier = { send: async (address, text) => void sent.push([address, text]) };
    const inbox: Notifier = {
      send: async (address, text, words) => void kept.push(words ? [address, text, words] : [address, text]),
    };
    const notifier = alsoToPreferredChat(inbox, {
      policy,
      store: new MemoryStore(),
      notifiers: { telegram },
      logger: createLogger('silent'),
    });
    await notifier.send({ channel: 'ussd', conversationId: '+256700000001' }, 'Paid 500 UGX to John.');
    await notifier.send({ channel: 'ussd', conversationId: '+256700000001' }, 'Paid 500 UGX to John.');
    const words = { key: 'notify.payment.processed', params: { amount: '700' }, from: 'notify' as const };
    await notifier.send({ channel: 'ussd', conversationId: '+256700000002' }, 'Paid 700 UGX to Ann.', words);
    expect(kept).toHaveLength(3);
    // The inbox keeps the message's key and values, to say it in the person's language at the next dial.
    expect(kept[2]?.[2]).toEqual(words);
    expect(sent).toEqual([[{ channel: 'telegram', conversationId: '42' }, 'Paid 500 UGX to John.']]);
  });
});
