/**
 * The words of notifications kept for the next USSD dial: whole outcomes, within the room above the menu,
 * each with our short ref, in every language; the full words (chat, SMS) with the service's id beside it; and
 * no notification names a state of the service.
 */
import { describe, expect, it } from 'vitest';
import { LANGS } from '../../flows/types.js';
import { DIAL_NOTES_MAX } from '../../src/conversation/flow/plain-text.js';
import { notifyMessages, notifyText } from '../../src/notifications/messages.js';

/**
 * The longest values a notice gives, as two realistic worsts: the largest amount of a currency without cents
 * (9 characters) to the longest number we read (Nigeria's, 14), and an amount with cents (10) to a Ugandan or
 * Kenyan number (13); a short ref of the five characters it has for its first 33 million operations; long
 * references and a long reason.
 */
const COMMON = {
  currency: 'UGX',
  ref: 'MC-7K2QX',
  id: '4096731',
  reference: 'ABCDEFGH12',
  by: 'Approver Name',
  reason: 'The name on the account does not match the name on the network records for this number',
  name: ' (Sarah Nakato)',
  hours: '24',
  code: '12345678AB',
  minutes: '10',
  state: 'processing_started',
  told: 'completed',
};
const WORSTS = [
  { ...COMMON, amount: '5000000', phone: '+2348031234567' },
  { ...COMMON, amount: '150000.50', phone: '+254712345678' },
];
const LONGEST = WORSTS[0]!;
/** Every state a `select` of the USSD-told notices words. */
const STATES = ['processing_started', 'completed', 'failed', 'refused', 'rejected', 'cancelled', 'expired'];
/** The notices USSD users are told at the next dial (src/notifications/events.ts: outcomes, and who must act). */
const KEYS = Object.keys(notifyMessages.en).filter(
  (key) =>
    !key.endsWith('.dial') &&
    /^notify\.(payment\.(processed|processed_with_errors|rejected|cancelled|approval_needed|approval_requested|recipient\.paused_for_admin_action|other|not_made)|request\.|collection\.|approval\.|code\.|correction\.)/.test(
      key,
    ),
);
/** The USSD-told notices of a payment's, a request's or a collection's outcome: all but the one-time codes. */
const OUTCOMES = KEYS.filter((key) => !key.startsWith('notify.code.'));

describe('notifications at the next dial', () => {
  it('has them all, each with its short form', () => {
    expect(OUTCOMES.length).toBeGreaterThan(20);
    for (const lang of LANGS)
      for (const key of KEYS) expect(notifyMessages[lang][`${key}.dial`], `${lang} ${key}.dial`).toBeDefined();
  });

  it('every outcome fits the room above the menu whole with our short ref, in every language', () => {
    for (const lang of LANGS) {
      for (const key of KEYS) {
        for (const values of WORSTS) {
          for (const state of STATES) {
            const text = notifyText(lang, key, { ...values, state }, { forDial: true });
            expect(text.length, `${lang} ${key}: ${text}`).toBeLessThanOrEqual(DIAL_NOTES_MAX);
            expect(text, `${lang} ${key}`).not.toMatch(/\.\.\.$|…$/);
            if (key.startsWith('notify.code.')) expect(text).toContain(values.code);
            else expect(text, `${lang} ${key}`).toContain(values.ref);
            // The screen names ours alone: the service's id is for the full words.
            expect(text).not.toMatch(/\((service|huduma) /);
          }
        }
      }
    }
  });

  it('names the ref the way every USSD screen does, after the outcome and before a reason', () => {
    const label = { en: 'Ref', sw: 'Kumb', fr: 'Réf' } as const;
    for (const lang of LANGS) {
      for (const key of OUTCOMES.filter((k) => !k.startsWith('notify.correction.'))) {
        const text = notifyText(lang, key, { ...LONGEST, amount: '500', phone: '+256772000001' }, { forDial: true });
        expect(text, `${lang} ${key}`).toContain(`${label[lang]} MC-7K2QX.`);
      }
    }
    expect(notifyText('en', 'notify.payment.processed', LONGEST, { forDial: true })).toBe(
      'Done: 5,000,000 UGX reached +2348031234567. Ref MC-7K2QX.',
    );
  });

  it('keeps the reason after the ref when it fits, drops it whole when it does not; the chat gets it all', () => {
    const full = notifyText('en', 'notify.payment.rejected', LONGEST);
    expect(full).toContain(LONGEST.reason);
    expect(notifyText('en', 'notify.payment.rejected', LONGEST, { forDial: true })).toBe(
      'Rejected: 5,000,000 UGX to +2348031234567. Ref MC-7K2QX.',
    );
    const short = { ...LONGEST, amount: '500', phone: '+256772000001', reason: 'Over budget.' };
    expect(notifyText('en', 'notify.payment.rejected', short, { forDial: true })).toBe(
      'Rejected: 500 UGX to +256772000001. Ref MC-7K2QX. Over budget.',
    );
  });

  it("the chat's and the SMS's words put the service's id beside our ref, in the reader's language", () => {
    expect(notifyText('en', 'notify.payment.processed', LONGEST)).toBe(
      'Done: 5,000,000 UGX reached +2348031234567. Ref MC-7K2QX (service 4096731).',
    );
    expect(notifyText('sw', 'notify.payment.rejected', LONGEST)).toMatch(/^Malipo MC-7K2QX \(huduma 4096731\) ya /);
    expect(notifyText('fr', 'notify.request.successful', LONGEST)).toMatch(
      /^Votre demande MC-7K2QX \(service 4096731\) de /,
    );
    // No id (not known yet, or the ref is the service's id itself): the ref alone, never twice.
    const { id: _unknown, ...noId } = LONGEST;
    expect(notifyText('en', 'notify.payment.processed', noId)).toMatch(/Ref MC-7K2QX\.$/);
    expect(notifyText('en', 'notify.payment.processed', { ...LONGEST, ref: '4096731' })).toMatch(/Ref 4096731\.$/);
    for (const lang of LANGS) {
      for (const key of OUTCOMES) {
        const text = notifyText(lang, key, LONGEST);
        expect(text, `${lang} ${key}`).toContain('MC-7K2QX');
        if (key !== 'notify.payment.not_made' && key !== 'notify.request.not_made')
          expect(text, `${lang} ${key}`).toMatch(/MC-7K2QX \((service|huduma) 4096731\)/);
      }
    }
  });

  it("never names a state of the service: an unknown or unworded state is said in people's words", () => {
    for (const lang of LANGS) {
      for (const state of ['completed', 'new', 'processing_started', 'constructor']) {
        for (const key of ['notify.payment.other', 'notify.request.other']) {
          const text = notifyText(lang, key, { ...LONGEST, state });
          expect(text, `${lang} ${key} ${state}`).not.toContain(state);
          expect(text).toContain(lang === 'fr' ? '5\u202F000\u202F000 UGX' : '5,000,000 UGX');
        }
      }
    }
    expect(notifyText('en', 'notify.payment.other', { ...LONGEST, state: 'completed' })).toMatch(
      /^Done: 5,000,000 UGX reached/,
    );
  });
});
