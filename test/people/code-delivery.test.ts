/**
 * One-time codes to the person (src/people/code-delivery.ts): by SMS when the product can text, else (or when the
 * text was not accepted) kept for the person's next USSD dial; a person without a number gets none; the operator
 * reads only the masked number.
 */
import { describe, expect, it } from 'vitest';
import { storedNotes } from '../../src/conversation/channels/ussd-inbox.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { keys } from '../../src/store/keys.js';
import { createLogger } from '../../src/log.js';
import { codeDelivery, maskedNumber, sentLine } from '../../src/people/code-delivery.js';
import type { PersonView } from '../../src/people/people.js';
import { SmsOutbox } from '../../src/notifications/sms.js';

const logger = createLogger('silent');
const NUMBER = '+256772123460';
const amina: PersonView = {
  id: 'amina',
  name: 'Amina',
  role: 'teller',
  status: 'active',
  pin: 'must change',
  pinLockedUntil: null,
  preferredChat: null,
  identities: [
    { channel: 'slack', userId: 'UAMINA' },
    { channel: 'ussd', userId: NUMBER },
  ],
};
const pending = async (store: MemoryStore) =>
  storedNotes((await store.get(keys.pending({ channel: 'ussd', conversationId: NUMBER })))?.snapshot);

describe('one-time codes to the person', () => {
  it('texts the code to their number; nothing is kept for the dial', async () => {
    const store = new MemoryStore();
    const sms = new SmsOutbox();
    const sent = await codeDelivery({ sms, store, logger }).send(amina, 'pin', '12345678', { hours: 24 });
    expect(sent).toEqual({ by: 'sms', to: NUMBER });
    expect(sms.to(NUMBER).map((m) => m.text)).toEqual([expect.stringMatching(/one-time code is 12345678.*24 hours/)]);
    expect(await pending(store)).toEqual([]);
    expect(sentLine(sent)).toBe('code sent to +256 77… 460 by SMS');
  });

  it('without an SMS sender, or when the text is not accepted, keeps it for the next dial, in their language', async () => {
    for (const sms of [undefined, { send: () => Promise.reject(new Error('provider down')) }]) {
      const store = new MemoryStore();
      const sent = await codeDelivery({ ...(sms ? { sms } : {}), store, languageOf: async () => 'sw', logger }).send(
        amina,
        'link',
        'ABCD2345EF',
        { minutes: 10 },
      );
      expect(sent).toEqual({ by: 'dial', to: NUMBER });
      const notes = await pending(store);
      expect(notes).toHaveLength(1);
      expect(notes[0]!.text).toMatch(/^Msimbo ABCD2345EF/);
      expect(notes[0]!.words).toMatchObject({ key: 'notify.code.link', from: 'notify' });
      expect(sentLine(sent)).toBe('code kept for +256 77… 460: shown at their next USSD dial');
    }
  });

  it('refuses a person without a number: no code can reach them', async () => {
    const store = new MemoryStore();
    const sms = new SmsOutbox();
    await expect(
      codeDelivery({ sms, store, logger }).send({ ...amina, identities: [amina.identities[0]!] }, 'pin', '1'),
    ).rejects.toMatchObject({ status: 409, message: expect.stringMatching(/no phone number/) });
  });

  it('masks a number as the operator sees it', () => {
    expect(maskedNumber('+256772123460')).toBe('+256 77… 460');
    expect(maskedNumber('+254712345678')).toBe('+254 71… 678');
    expect(maskedNumber('+15551234567')).toBe('+1 55… 567');
  });
});
