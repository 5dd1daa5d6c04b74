/**
 * Words of the notifications pushed into chats, per language, with `{param}` placeholders.
 * Keys are `notify.<resource>.<state>`; a state without its own key uses `notify.<resource>.other`.
 */
import type { Lang, Messages, Params } from '../../flows/types.js';
import { fillTemplate } from '../conversation/flow/plain-text.js';

export const notifyMessages: Record<Lang, Messages> = {
  en: {
    'notify.payment.validated': 'Payment {ref} of {amount} {currency} to {phone} passed its checks.',
    'notify.payment.approval_needed':
      'Payment {ref} of {amount} {currency} to {phone} needs approval: an approver of your organization must approve it in the web portal before it is sent.',
    'notify.payment.approval_requested': 'The approvers were asked to approve payment {ref} of {amount} {currency} to {phone}.',
    'notify.payment.approved': 'Payment {ref} of {amount} {currency} to {phone} was approved and is being sent.',
    'notify.payment.scheduled': 'Payment {ref} of {amount} {currency} to {phone} is scheduled.',
    'notify.payment.processed': 'Done: {amount} {currency} reached {phone} (payment {ref}).',
    'notify.payment.processed_with_errors': 'Payment {ref} of {amount} {currency} to {phone} failed: {reason}',
    'notify.payment.rejected': 'Payment {ref} of {amount} {currency} to {phone} was rejected: {reason}',
    'notify.payment.cancelled': 'Payment {ref} of {amount} {currency} to {phone} was cancelled: {reason}',
    'notify.payment.other': 'Payment {ref} of {amount} {currency} to {phone} is now {state}.',
    'notify.payment.not_made':
      'Your payment of {amount} {currency} to {phone} was NOT made: we said it was already submitted, but the service has no such payment. Nothing was sent; your limit is restored. You may pay again.',
    'notify.payment.recipient.queued': 'Payment {ref} of {amount} {currency} to {phone} is queued at the network and will be sent shortly.',
    'notify.payment.recipient.paused': 'Payment {ref} of {amount} {currency} to {phone} is paused: {reason}. It will be sent when the network resumes.',
    'notify.payment.recipient.parked': 'Payment {ref} of {amount} {currency} to {phone} is parked by the network and will be tried again later.',
    'notify.payment.recipient.paused_for_admin_action':
      'Payment {ref} of {amount} {currency} to {phone} is on hold: an administrator of your organization must release it in the web portal.',
    'notify.collection.received': 'You received {amount} {currency} from {phone}{name} (ref {reference}).',
    'notify.request.successful': 'Your request {ref} of {amount} {currency} from {phone} was paid.',
    'notify.request.failed': 'Your request {ref} of {amount} {currency} from {phone} failed: {reason}',
    'notify.request.expired': 'Your request {ref} of {amount} {currency} from {phone} expired unpaid.',
    'notify.request.reversed': 'The payment for your request {ref} of {amount} {currency} from {phone} was reversed: the money went back.',
    'notify.request.other': 'Your request {ref} of {amount} {currency} from {phone} is now {state}.',
    'notify.request.not_made': 'Your request of {amount} {currency} from {phone} was NOT made: the service has no such request. Nothing was asked of {phone}. You may ask again.',
    'notify.noReason': 'no reason given',
    'notify.correction.payment': 'Correction: payment {ref} of {amount} {currency} to {phone} is {state} at the service, not {told} as we told you.',
    'notify.correction.request': 'Correction: your request {ref} of {amount} {currency} from {phone} is {state} at the service, not {told} as we told you.',

    'notify.approval.approved': 'Your payment of {amount} {currency} to {phone} was approved by {by}: payment {id} was sent (state: {state}). You will be told when it completes.',
    'notify.approval.approvedBefore': 'Your payment of {amount} {currency} to {phone} was approved by {by} and sent. You will be told when it completes.',
    'notify.approval.unconfirmed': 'Your payment of {amount} {currency} to {phone} was approved by {by}; whether the service took it is being confirmed. Do not pay again: you will be told the result.',
    'notify.approval.refused': 'Your payment of {amount} {currency} to {phone} was approved by {by} but could not be sent ({reason}). Nothing was sent.',
    'notify.approval.rejected': 'Your payment of {amount} {currency} to {phone} was rejected by {by}: {reason}. Nothing was sent.',
    'notify.approval.expired': 'Your payment of {amount} {currency} to {phone} was not approved within {hours} hours and has expired. Nothing was sent.',
  },
  sw: {
    'notify.payment.validated': 'Malipo {ref} ya {amount} {currency} kwa {phone} yamepita ukaguzi.',
    'notify.payment.approval_needed':
      'Malipo {ref} ya {amount} {currency} kwa {phone} yanahitaji idhini: mwidhinishaji wa shirika lako lazima ayaidhinishe kwenye tovuti kabla hayajatumwa.',
    'notify.payment.approval_requested': 'Waidhinishaji wameombwa kuidhinisha malipo {ref} ya {amount} {currency} kwa {phone}.',
    'notify.payment.approved': 'Malipo {ref} ya {amount} {currency} kwa {phone} yameidhinishwa na yanatumwa.',
    'notify.payment.scheduled': 'Malipo {ref} ya {amount} {currency} kwa {phone} yamepangwa.',
    'notify.payment.processed': 'Imekamilika: {amount} {currency} imefika kwa {phone} (malipo {ref}).',
    'notify.payment.processed_with_errors': 'Malipo {ref} ya {amount} {currency} kwa {phone} yameshindwa: {reason}',
    'notify.payment.rejected': 'Malipo {ref} ya {amount} {currency} kwa {phone} yamekataliwa: {reason}',
    'notify.payment.cancelled': 'Malipo {ref} ya {amount} {currency} kwa {phone} yameghairiwa: {reason}',
    'notify.payment.other': 'Malipo {ref} ya {amount} {currency} kwa {phone} sasa ni {state}.',
    'notify.payment.not_made':
      'Malipo yako ya {amount} {currency} kwa {phone} HAYAKUFANYIKA: tulisema yalishatumwa, lakini huduma haina malipo hayo. Hakuna kilichotumwa; kikomo chako kimerudishwa. Unaweza kulipa tena.',
    'notify.payment.recipient.queued': 'Malipo {ref} ya {amount} {currency} kwa {phone} yako foleni kwenye mtandao na yatatumwa hivi karibuni.',
    'notify.payment.recipient.paused': 'Malipo {ref} ya {amount} {currency} kwa {phone} yamesitishwa: {reason}. Yatatumwa mtandao ukirejea.',
    'notify.payment.recipient.parked': 'Malipo {ref} ya {amount} {currency} kwa {phone} yamewekwa kando na mtandao na yatajaribiwa tena baadaye.',
    'notify.payment.recipient.paused_for_admin_action':
      'Malipo {ref} ya {amount} {currency} kwa {phone} yamezuiliwa: msimamizi wa shirika lako lazima ayaruhusu kwenye tovuti.',
    'notify.collection.received': 'Umepokea {amount} {currency} kutoka {phone}{name} (kumb. {reference}).',
    'notify.request.successful': 'Ombi lako {ref} la {amount} {currency} kutoka {phone} limelipwa.',
    'notify.request.failed': 'Ombi lako {ref} la {amount} {currency} kutoka {phone} limeshindwa: {reason}',
    'notify.request.expired': 'Ombi lako {ref} la {amount} {currency} kutoka {phone} limeisha muda bila kulipwa.',
    'notify.request.reversed': 'Malipo ya ombi lako {ref} la {amount} {currency} kutoka {phone} yamerejeshwa: pesa imerudishwa.',
    'notify.request.other': 'Ombi lako {ref} la {amount} {currency} kutoka {phone} sasa ni {state}.',
    'notify.request.not_made': 'Ombi lako la {amount} {currency} kutoka {phone} HALIKUFANYIKA: huduma haina ombi hilo. Hakuna kilichoombwa kwa {phone}. Unaweza kuomba tena.',
    'notify.noReason': 'hakuna sababu iliyotolewa',
    'notify.correction.payment': 'Marekebisho: malipo {ref} ya {amount} {currency} kwa {phone} ni {state} kwenye huduma, si {told} kama tulivyokuambia.',
    'notify.correction.request': 'Marekebisho: ombi lako {ref} la {amount} {currency} kutoka {phone} ni {state} kwenye huduma, si {told} kama tulivyokuambia.',

    'notify.approval.approved': 'Malipo yako ya {amount} {currency} kwa {phone} yameidhinishwa na {by}: malipo {id} yametumwa (hali: {state}). Utaambiwa yakikamilika.',
    'notify.approval.approvedBefore': 'Malipo yako ya {amount} {currency} kwa {phone} yameidhinishwa na {by} na kutumwa. Utaambiwa yakikamilika.',
    'notify.approval.unconfirmed': 'Malipo yako ya {amount} {currency} kwa {phone} yameidhinishwa na {by}; tunathibitisha kama huduma imeyapokea. Usilipe tena: utaambiwa matokeo.',
    'notify.approval.refused': 'Malipo yako ya {amount} {currency} kwa {phone} yameidhinishwa na {by} lakini hayakuweza kutumwa ({reason}). Hakuna kilichotumwa.',
    'notify.approval.rejected': 'Malipo yako ya {amount} {currency} kwa {phone} yamekataliwa na {by}: {reason}. Hakuna kilichotumwa.',
    'notify.approval.expired': 'Malipo yako ya {amount} {currency} kwa {phone} hayakuidhinishwa ndani ya saa {hours} na muda wake umeisha. Hakuna kilichotumwa.',
  },
};

/** The words of `key` in `lang` (English when that language lacks it), its params filled; an empty reason says none was given. */
export function notifyText(lang: Lang, key: string, params: Params): string {
  const catalogue = notifyMessages[lang] ?? notifyMessages.en;
  const template = catalogue[key] ?? notifyMessages.en[key] ?? key;
  return fillTemplate(template, params.reason === '' ? { ...params, reason: catalogue['notify.noReason'] ?? '' } : params);
}
