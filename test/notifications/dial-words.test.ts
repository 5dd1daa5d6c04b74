/**
 * The words of notifications kept for the next USSD dial: whole outcomes, within the room above the menu,
 * in every language; and no notification names a state of the service.
 */
import { describe, expect, it } from 'vitest';
import { LANGS } from '../../flows/types.js';
import { DIAL_NOTES_MAX } from '../../src/conversation/flow/plain-text.js';
import { notifyMessages, notifyText } from '../../src/notifications/messages.js';

/** The longest values a notice gives: a large amount, a full number, long references, a long reason. */
const LONGEST = {
  amount: '1500000',
  currency: 'UGX',
  phone: '+256772000001',
  ref: '12345678',
  id: '12345678',
  reference: 'ABCDEFGH12',
  by: 'Approver Name',
  reason: 'The name on the account does not match the name on the network records for this number',
  name: ' (Sarah Nakato)',
  hours: '24',
  code: '12345678AB',
  minutes: '10',
  state: 'processing_started',
};
/** The notices USSD users are told at the next dial (src/notifications/events.ts: outcomes, and who must act). */
const KEYS = Object.keys(notifyMessages.en).filter(
  (key) =>
    !key.endsWith('.dial') &&
    /^notify\.(payment\.(processed|processed_with_errors|rejected|cancelled|approval_needed|approval_requested|recipient\.paused_for_admin_action|other|not_made)|request\.|collection\.|approval\.|code\.)/.test(
      key,
    ),
);

describe('notifications at the next dial', () => {
  it('has them all', () => expect(KEYS.length).toBeGreaterThan(15));

  it('every one fits the room above the menu whole, in every language: no cut word, no "..."', () => {
    for (const lang of LANGS) {
      for (const key of KEYS) {
        const text = notifyText(lang, key, LONGEST, { forDial: true });
        expect(text.length, `${lang} ${key}: ${text}`).toBeLessThanOrEqual(DIAL_NOTES_MAX);
        expect(text, `${lang} ${key}`).not.toMatch(/\.\.\.$|…$/);
      }
    }
  });

  it('the chat and SMS get the full words; a short full text is kept whole for the dial too', () => {
    const full = notifyText('en', 'notify.payment.rejected', LONGEST);
    expect(full).toContain(LONGEST.reason);
    expect(notifyText('en', 'notify.payment.rejected', LONGEST, { forDial: true })).toBe(
      'Rejected, not paid: 1,500,000 UGX to +256772000001.',
    );
    // A short reason is kept whole after the outcome.
    expect(notifyText('en', 'notify.payment.rejected', { ...LONGEST, reason: 'Over budget.' }, { forDial: true })).toBe(
      'Rejected, not paid: 1,500,000 UGX to +256772000001. Over budget.',
    );
    const short = { ...LONGEST, amount: '500', reason: 'Over budget', ref: '7' };
    expect(notifyText('en', 'notify.payment.rejected', short, { forDial: true })).toBe(
      'Payment 7 of 500 UGX to +256772000001 was rejected: Over budget',
    );
  });

  it("never names a state of the service: an unknown or unworded state is said in people's words", () => {
    for (const lang of LANGS) {
      for (const state of ['completed', 'new', 'processing_started', 'constructor']) {
        for (const key of ['notify.payment.other', 'notify.request.other']) {
          const text = notifyText(lang, key, { ...LONGEST, state });
          expect(text, `${lang} ${key} ${state}`).not.toContain(state);
          expect(text).toContain(lang === 'fr' ? '1\u202F500\u202F000 UGX' : '1,500,000 UGX');
        }
      }
    }
    expect(notifyText('en', 'notify.payment.other', { ...LONGEST, state: 'completed' })).toMatch(
      /^Done: 1,500,000 UGX reached/,
    );
  });
});
