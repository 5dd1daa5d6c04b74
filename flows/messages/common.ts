/**
 * Words the engine itself says (keys `common.*`), in English and Swahili, and labels adapters show for
 * navigation. Flows' own words live beside them in flows/messages/<flow>.ts; a service failure's words in
 * flows/failure.ts.
 */
import type { Lang, Messages } from '../types.js';

export const commonMessages: Record<Lang, Messages> = {
  en: {
    'common.expired': 'Your session timed out, so we started again.',
    'common.notAllowed': 'Sorry, you are not allowed to use this service. Ask the operator for access.',
    'common.flowNotAllowed': 'You are not allowed to use that option.',
    'common.processing': 'We are still working on it. You will be notified of the result.',
    'common.confirming': 'We are still working on it: it is being confirmed. Do not send it again; you will be notified of the result.',
    'common.unavailable': 'We cannot reach your conversation right now. Please try again in a minute; nothing you confirmed is lost.',
    'common.cancelled': 'Cancelled. Nothing was sent.',
    'common.busy': 'Too many messages at once. Please try again.',
    'common.tooFast': 'You are sending messages too fast. Please wait a few seconds and try again.',
    'common.error': 'Something went wrong on our side. Please start again.',
    'common.secretLost': 'We were interrupted before your PIN was checked. Nothing was sent; please start again.',
    'common.pendingOutcome': 'Update on your last request:',
    'common.back': 'Back',
    'common.home': 'Home',
    'common.more': 'More',
    'common.cancel': 'Cancel',
    'common.yes': 'Yes',
    'common.no': 'No',
    'common.pickOne': 'Please pick one of the options.',
  },
  sw: {
    'common.expired': 'Muda wa kikao chako uliisha, kwa hiyo tumeanza upya.',
    'common.notAllowed': 'Samahani, huruhusiwi kutumia huduma hii. Omba ruhusa kwa mwendeshaji.',
    'common.flowNotAllowed': 'Huruhusiwi kutumia chaguo hilo.',
    'common.processing': 'Bado tunashughulikia ombi lako. Utaarifiwa matokeo.',
    'common.confirming': 'Bado tunashughulikia ombi lako: linathibitishwa. Usilitume tena; utaarifiwa matokeo.',
    'common.unavailable': 'Hatuwezi kufikia mazungumzo yako sasa. Tafadhali jaribu tena baada ya dakika moja; ulichothibitisha hakijapotea.',
    'common.cancelled': 'Imeghairiwa. Hakuna kilichotumwa.',
    'common.busy': 'Ujumbe mwingi kwa wakati mmoja. Tafadhali jaribu tena.',
    'common.tooFast': 'Unatuma ujumbe haraka mno. Tafadhali subiri sekunde chache kisha ujaribu tena.',
    'common.error': 'Kuna hitilafu upande wetu. Tafadhali anza upya.',
    'common.secretLost': 'Tulikatizwa kabla PIN yako haijakaguliwa. Hakuna kilichotumwa; tafadhali anza upya.',
    'common.pendingOutcome': 'Habari ya ombi lako la mwisho:',
    'common.back': 'Rudi',
    'common.home': 'Mwanzo',
    'common.more': 'Zaidi',
    'common.cancel': 'Ghairi',
    'common.yes': 'Ndiyo',
    'common.no': 'Hapana',
    'common.pickOne': 'Tafadhali chagua mojawapo ya machaguo.',
  },
};
