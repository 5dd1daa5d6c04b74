/**
 * Words of the notifications pushed into chats, per language (ICU MessageFormat, src/conversation/text.ts).
 * Keys are `notify.<resource>.<state>`; a state without its own key uses `notify.<resource>.other`, which says
 * what it means for the person, never the service's state name. A key with a `.dial` twin has a short form
 * for the USSD inbox (shown above the menu at the next dial): the same outcome in fewer words, our short ref in
 * its first sentences (`Ref MC-7K2QX.`, before a reason or advice), so the note keeps it whole within
 * {@link DIAL_NOTES_MAX} with the longest amount, number and ref; the SMS and the chats get the full words.
 *
 * `ref` is our short ref (src/journal/short-ref.ts) and `id`, when given, the service's id: the full words show
 * it beside ours (`MC-7K2QX (service 12)`, {@link referenceOf}); the dial's short forms show ours alone.
 */
import { isLang, type Lang, type Messages, type Params } from '../../flows/types.js';
import { DIAL_NOTES_MAX, fillTemplate, fitWhole } from '../conversation/flow/plain-text.js';
import { referenceOf } from '../journal/short-ref.js';

export const notifyMessages: Record<Lang, Messages> = {
  en: {
    'notify.payment.validated': 'Payment {ref} of {amount, number, money} {currency} to {phone} passed its checks.',
    'notify.payment.approval_needed':
      'Payment {ref} of {amount, number, money} {currency} to {phone} needs approval: an approver of your organization must approve it in the web portal before it is sent.',
    'notify.payment.approval_needed.dial': 'Needs approval: {amount, number, money} {currency} to {phone}. Ref {ref}.',
    'notify.payment.approval_requested':
      'The approvers were asked to approve payment {ref} of {amount, number, money} {currency} to {phone}.',
    'notify.payment.approval_requested.dial':
      'With approvers: {amount, number, money} {currency} to {phone}. Ref {ref}.',
    'notify.payment.approved':
      'Payment {ref} of {amount, number, money} {currency} to {phone} was approved and is being sent.',
    'notify.payment.scheduled': 'Payment {ref} of {amount, number, money} {currency} to {phone} is scheduled.',
    'notify.payment.processed': 'Done: {amount, number, money} {currency} reached {phone}. Ref {ref}.',
    'notify.payment.processed.dial': 'Done: {amount, number, money} {currency} reached {phone}. Ref {ref}.',
    'notify.payment.processed_with_errors':
      'Payment {ref} of {amount, number, money} {currency} to {phone} failed: {reason}',
    'notify.payment.processed_with_errors.dial':
      'Failed: {amount, number, money} {currency} to {phone}. Ref {ref}. {reason}',
    'notify.payment.rejected': 'Payment {ref} of {amount, number, money} {currency} to {phone} was rejected: {reason}',
    'notify.payment.rejected.dial': 'Rejected: {amount, number, money} {currency} to {phone}. Ref {ref}. {reason}',
    'notify.payment.cancelled':
      'Payment {ref} of {amount, number, money} {currency} to {phone} was cancelled: {reason}',
    'notify.payment.cancelled.dial': 'Cancelled: {amount, number, money} {currency} to {phone}. Ref {ref}. {reason}',
    'notify.payment.other':
      '{state, select, completed {Done: {amount, number, money} {currency} reached {phone}. Ref {ref}.} other {Payment {ref} of {amount, number, money} {currency} to {phone} is still being processed. You will be told the outcome.}}',
    'notify.payment.other.dial':
      '{state, select, completed {Done: {amount, number, money} {currency} reached {phone}. Ref {ref}.} other {In progress: {amount, number, money} {currency} to {phone}. Ref {ref}.}}',
    'notify.payment.not_made':
      'Your payment {ref} of {amount, number, money} {currency} to {phone} was NOT made: we checked, and the service has no such payment. Nothing was sent; your limit is restored. You may pay again.',
    'notify.payment.not_made.dial':
      'NOT made: {amount, number, money} {currency} to {phone}. Ref {ref}. Nothing was sent. You may pay again.',
    'notify.payment.recipient.queued':
      'Payment {ref} of {amount, number, money} {currency} to {phone} is queued at the network and will be sent shortly.',
    'notify.payment.recipient.paused':
      'Payment {ref} of {amount, number, money} {currency} to {phone} is paused: {reason}. It will be sent when the network resumes.',
    'notify.payment.recipient.parked':
      'Payment {ref} of {amount, number, money} {currency} to {phone} is parked by the network and will be tried again later.',
    'notify.payment.recipient.paused_for_admin_action':
      'Payment {ref} of {amount, number, money} {currency} to {phone} is on hold: an administrator of your organization must release it in the web portal.',
    'notify.payment.recipient.paused_for_admin_action.dial':
      'On hold: {amount, number, money} {currency} to {phone}. Ref {ref}. Your admin must release it.',
    'notify.collection.received':
      'You received {amount, number, money} {currency} from {phone}{name} for your request {ref} (their reference: {reference}).',
    'notify.collection.received.dial': 'Received: {amount, number, money} {currency} from {phone}. Ref {ref}.',
    'notify.request.successful': 'Your request {ref} of {amount, number, money} {currency} from {phone} was paid.',
    'notify.request.successful.dial': 'Request paid: {amount, number, money} {currency} from {phone}. Ref {ref}.',
    'notify.request.failed': 'Your request {ref} of {amount, number, money} {currency} from {phone} failed: {reason}',
    'notify.request.failed.dial': '{phone} did not pay {amount, number, money} {currency}. Ref {ref}. {reason}',
    'notify.request.expired': 'Your request {ref} of {amount, number, money} {currency} from {phone} expired unpaid.',
    'notify.request.expired.dial': 'Expired unpaid: {amount, number, money} {currency} from {phone}. Ref {ref}.',
    'notify.request.reversed':
      'The payment for your request {ref} of {amount, number, money} {currency} from {phone} was reversed: the money went back.',
    'notify.request.reversed.dial':
      'Paid back: {amount, number, money} {currency} to {phone}. Ref {ref}. Request reversed.',
    'notify.request.other':
      'Your request {ref} of {amount, number, money} {currency} from {phone} is still open. You will be told when it is paid.',
    'notify.request.other.dial': 'Request open: {amount, number, money} {currency} from {phone}. Ref {ref}.',
    'notify.request.not_made':
      'Your request {ref} of {amount, number, money} {currency} from {phone} was NOT made: the service has no such request. Nothing was asked of {phone}. You may ask again.',
    'notify.request.not_made.dial':
      'NOT made: {amount, number, money} {currency} from {phone}. Ref {ref}. You may ask again.',
    'notify.noReason': 'no reason given',
    'notify.service': 'service',
    'notify.correction.payment':
      'Correction: payment {ref} of {amount, number, money} {currency} to {phone} is {state, select, processed {done} completed {done} processed_with_errors {failed} failed {failed} refused {not made} rejected {rejected} cancelled {cancelled} other {still in progress}} at the service, not {told, select, processed {done} completed {done} processed_with_errors {failed} failed {failed} refused {not made} rejected {rejected} cancelled {cancelled} other {still in progress}} as we told you.',
    'notify.correction.payment.dial':
      'Correction: payment {ref} of {amount, number, money} {currency} is {state, select, completed {done} failed {failed} refused {not made} rejected {rejected} cancelled {cancelled} other {in progress}}.',
    'notify.correction.request':
      'Correction: your request {ref} of {amount, number, money} {currency} from {phone} is {state, select, successful {paid} completed {paid} refused {not made} failed {failed} expired {expired} reversed {reversed} other {still open}} at the service, not {told, select, successful {paid} completed {paid} refused {not made} failed {failed} expired {expired} reversed {reversed} other {still open}} as we told you.',
    'notify.correction.request.dial':
      'Correction: request {ref} of {amount, number, money} {currency} is {state, select, completed {paid} failed {failed} expired {expired} refused {not made} other {open}}.',
    'notify.approval.approved':
      'Your payment {ref} of {amount, number, money} {currency} to {phone} was approved by {by} and sent. You will be told when it arrives.',
    'notify.approval.approved.dial': 'Approved, sent: {amount, number, money} {currency} to {phone}. Ref {ref}.',
    'notify.approval.approvedBefore':
      'Your payment {ref} of {amount, number, money} {currency} to {phone} was approved by {by} and sent. You will be told when it completes.',
    'notify.approval.approvedBefore.dial': 'Approved, sent: {amount, number, money} {currency} to {phone}. Ref {ref}.',
    'notify.approval.unconfirmed':
      'Your payment {ref} of {amount, number, money} {currency} to {phone} was approved by {by}; whether the service took it is being confirmed. Do not pay again: you will be told the result.',
    'notify.approval.unconfirmed.dial':
      "Don't pay again: {amount, number, money} {currency} to {phone}. Ref {ref}. Approved, being confirmed.",
    'notify.approval.refused':
      'Your payment {ref} of {amount, number, money} {currency} to {phone} was approved by {by} but could not be sent ({reason}). Nothing was sent.',
    'notify.approval.refused.dial': 'Not sent: {amount, number, money} {currency} to {phone}. Ref {ref}. {reason}',
    'notify.approval.rejected':
      'Your payment {ref} of {amount, number, money} {currency} to {phone} was rejected by {by}: {reason}. Nothing was sent.',
    'notify.approval.rejected.dial':
      'Not approved: {amount, number, money} {currency} to {phone}. Ref {ref}. Not sent.',
    'notify.approval.expired':
      'Your payment {ref} of {amount, number, money} {currency} to {phone} was not approved within {hours} hours and has expired. Nothing was sent.',
    'notify.approval.expired.dial':
      'Expired: {amount, number, money} {currency} to {phone}. Ref {ref}. Not approved in time.',
    'notify.code.pin':
      'Your PIN was reset. Your one-time code is {code}: dial us and type it to choose a new PIN. It works once, for {hours} hours. Never give it to anyone, operators included.',
    'notify.code.pin.dial': 'Code {code}: type it to set your new PIN. Once, {hours}h.',
    'notify.code.link':
      'Your link code is {code}. Send it to our bot from your chat app within {minutes} minutes: Telegram /link {code}, WhatsApp link {code}, Slack /momo link {code}. It works once. Never give it to anyone.',
    'notify.code.link.dial': 'Link code {code}: send it to our bot. Once, {minutes} min.',
  },
  sw: {
    'notify.payment.validated': 'Malipo {ref} ya {amount, number, money} {currency} kwa {phone} yamepita ukaguzi.',
    'notify.payment.approval_needed':
      'Malipo {ref} ya {amount, number, money} {currency} kwa {phone} yanahitaji idhini: mwidhinishaji wa shirika lako lazima ayaidhinishe kwenye tovuti kabla hayajatumwa.',
    'notify.payment.approval_needed.dial': 'Subiri idhini: {amount, number, money} {currency} kwa {phone}. Kumb {ref}.',
    'notify.payment.approval_requested':
      'Waidhinishaji wameombwa kuidhinisha malipo {ref} ya {amount, number, money} {currency} kwa {phone}.',
    'notify.payment.approval_requested.dial':
      'Subiri idhini: {amount, number, money} {currency} kwa {phone}. Kumb {ref}. Waidhinishaji wameombwa.',
    'notify.payment.approved':
      'Malipo {ref} ya {amount, number, money} {currency} kwa {phone} yameidhinishwa na yanatumwa.',
    'notify.payment.scheduled': 'Malipo {ref} ya {amount, number, money} {currency} kwa {phone} yamepangwa.',
    'notify.payment.processed': 'Imekamilika: {amount, number, money} {currency} imefika kwa {phone}. Kumb {ref}.',
    'notify.payment.processed.dial': 'Imekamilika: {amount, number, money} {currency} kwa {phone}. Kumb {ref}.',
    'notify.payment.processed_with_errors':
      'Malipo {ref} ya {amount, number, money} {currency} kwa {phone} yameshindwa: {reason}',
    'notify.payment.processed_with_errors.dial':
      'Yameshindwa: {amount, number, money} {currency} kwa {phone}. Kumb {ref}. {reason}',
    'notify.payment.rejected': 'Malipo {ref} ya {amount, number, money} {currency} kwa {phone} yamekataliwa: {reason}',
    'notify.payment.rejected.dial':
      'Yamekataliwa: {amount, number, money} {currency} kwa {phone}. Kumb {ref}. {reason}',
    'notify.payment.cancelled': 'Malipo {ref} ya {amount, number, money} {currency} kwa {phone} yameghairiwa: {reason}',
    'notify.payment.cancelled.dial':
      'Yameghairiwa: {amount, number, money} {currency} kwa {phone}. Kumb {ref}. {reason}',
    'notify.payment.other':
      '{state, select, completed {Imekamilika: {amount, number, money} {currency} imefika kwa {phone}. Kumb {ref}.} other {Malipo {ref} ya {amount, number, money} {currency} kwa {phone} bado yanashughulikiwa. Utaambiwa matokeo.}}',
    'notify.payment.other.dial':
      '{state, select, completed {Imekamilika: {amount, number, money} {currency} kwa {phone}. Kumb {ref}.} other {Yanaendelea: {amount, number, money} {currency} kwa {phone}. Kumb {ref}.}}',
    'notify.payment.not_made':
      'Malipo yako {ref} ya {amount, number, money} {currency} kwa {phone} HAYAKUFANYIKA: tumekagua, na huduma haina malipo hayo. Hakuna kilichotumwa; kikomo chako kimerejeshwa. Unaweza kulipa tena.',
    'notify.payment.not_made.dial':
      'HAYAKUFANYIKA: {amount, number, money} {currency} kwa {phone}. Kumb {ref}. Unaweza kulipa tena.',
    'notify.payment.recipient.queued':
      'Malipo {ref} ya {amount, number, money} {currency} kwa {phone} yako foleni kwenye mtandao na yatatumwa hivi karibuni.',
    'notify.payment.recipient.paused':
      'Malipo {ref} ya {amount, number, money} {currency} kwa {phone} yamesitishwa: {reason}. Yatatumwa mtandao ukirejea.',
    'notify.payment.recipient.parked':
      'Malipo {ref} ya {amount, number, money} {currency} kwa {phone} yamewekwa kando na mtandao na yatajaribiwa tena baadaye.',
    'notify.payment.recipient.paused_for_admin_action':
      'Malipo {ref} ya {amount, number, money} {currency} kwa {phone} yamezuiliwa: msimamizi wa shirika lako lazima ayaruhusu kwenye tovuti.',
    'notify.payment.recipient.paused_for_admin_action.dial':
      'Yamezuiliwa: {amount, number, money} {currency} kwa {phone}. Kumb {ref}. Msimamizi ayaruhusu.',
    'notify.collection.received':
      'Umepokea {amount, number, money} {currency} kutoka {phone}{name} kwa ombi lako {ref} (kumbukumbu yao: {reference}).',
    'notify.collection.received.dial': 'Umepokea {amount, number, money} {currency} kutoka {phone}. Kumb {ref}.',
    'notify.request.successful': 'Ombi lako {ref} la {amount, number, money} {currency} kutoka {phone} limelipwa.',
    'notify.request.successful.dial': '{phone} amelipa ombi la {amount, number, money} {currency}. Kumb {ref}.',
    'notify.request.failed':
      'Ombi lako {ref} la {amount, number, money} {currency} kutoka {phone} limeshindwa: {reason}',
    'notify.request.failed.dial': '{phone} hakulipa ombi la {amount, number, money} {currency}. Kumb {ref}. {reason}',
    'notify.request.expired':
      'Ombi lako {ref} la {amount, number, money} {currency} kutoka {phone} limeisha muda bila kulipwa.',
    'notify.request.expired.dial':
      'Ombi limeisha: {amount, number, money} {currency} kwa {phone}. Kumb {ref}. Halikulipwa.',
    'notify.request.reversed':
      'Malipo ya ombi lako {ref} la {amount, number, money} {currency} kutoka {phone} yamerejeshwa: pesa imerudishwa.',
    'notify.request.reversed.dial':
      'Imerudishwa: {amount, number, money} {currency} kwa {phone}. Kumb {ref}. Malipo ya ombi yamerejeshwa.',
    'notify.request.other':
      'Ombi lako {ref} la {amount, number, money} {currency} kutoka {phone} bado liko wazi. Utaambiwa likilipwa.',
    'notify.request.other.dial': 'Ombi liko wazi: {amount, number, money} {currency} kwa {phone}. Kumb {ref}.',
    'notify.request.not_made':
      'Ombi lako {ref} la {amount, number, money} {currency} kutoka {phone} HALIKUFANYIKA: huduma haina ombi hilo. Hakuna kilichoombwa kwa {phone}. Unaweza kuomba tena.',
    'notify.request.not_made.dial':
      'HALIKUFANYIKA: {amount, number, money} {currency} kwa {phone}. Kumb {ref}. Omba tena.',
    'notify.noReason': 'hakuna sababu iliyotolewa',
    'notify.service': 'huduma',
    'notify.correction.payment':
      'Marekebisho: malipo {ref} ya {amount, number, money} {currency} kwa {phone} ni {state, select, processed {imekamilika} completed {imekamilika} processed_with_errors {imeshindwa} failed {imeshindwa} refused {haikufanyika} rejected {imekataliwa} cancelled {imeghairiwa} other {bado inashughulikiwa}} kwenye huduma, si {told, select, processed {imekamilika} completed {imekamilika} processed_with_errors {imeshindwa} failed {imeshindwa} refused {haikufanyika} rejected {imekataliwa} cancelled {imeghairiwa} other {bado inashughulikiwa}} kama tulivyokuambia.',
    'notify.correction.payment.dial':
      'Marekebisho: malipo {ref} ya {amount, number, money} {currency} {state, select, completed {yamekamilika} failed {yameshindwa} refused {hayakufanyika} rejected {yamekataliwa} cancelled {yameghairiwa} other {yanaendelea}}.',
    'notify.correction.request':
      'Marekebisho: ombi lako {ref} la {amount, number, money} {currency} kutoka {phone} ni {state, select, successful {limelipwa} completed {limelipwa} refused {halikufanyika} failed {limeshindwa} expired {limeisha muda} reversed {limerejeshwa} other {bado liko wazi}} kwenye huduma, si {told, select, successful {limelipwa} completed {limelipwa} refused {halikufanyika} failed {limeshindwa} expired {limeisha muda} reversed {limerejeshwa} other {bado liko wazi}} kama tulivyokuambia.',
    'notify.correction.request.dial':
      'Marekebisho: ombi {ref} la {amount, number, money} {currency} {state, select, completed {limelipwa} failed {limeshindwa} expired {limeisha} refused {halikufanyika} other {liko wazi}}.',
    'notify.approval.approved':
      'Malipo yako {ref} ya {amount, number, money} {currency} kwa {phone} yameidhinishwa na {by} na kutumwa. Utaambiwa yakifika.',
    'notify.approval.approved.dial':
      'Yametumwa: {amount, number, money} {currency} kwa {phone}. Kumb {ref}. Yameidhinishwa.',
    'notify.approval.approvedBefore':
      'Malipo yako {ref} ya {amount, number, money} {currency} kwa {phone} yameidhinishwa na {by} na kutumwa. Utaambiwa yakikamilika.',
    'notify.approval.approvedBefore.dial':
      'Yametumwa: {amount, number, money} {currency} kwa {phone}. Kumb {ref}. Yameidhinishwa.',
    'notify.approval.unconfirmed':
      'Malipo yako {ref} ya {amount, number, money} {currency} kwa {phone} yameidhinishwa na {by}; tunathibitisha kama huduma imeyapokea. Usilipe tena: utaambiwa matokeo.',
    'notify.approval.unconfirmed.dial':
      'Usilipe tena: {amount, number, money} {currency} kwa {phone}. Kumb {ref}. Yameidhinishwa, tunathibitisha.',
    'notify.approval.refused':
      'Malipo yako {ref} ya {amount, number, money} {currency} kwa {phone} yameidhinishwa na {by} lakini hayakuweza kutumwa ({reason}). Hakuna kilichotumwa.',
    'notify.approval.refused.dial': 'Hayakutumwa: {amount, number, money} {currency} kwa {phone}. Kumb {ref}. {reason}',
    'notify.approval.rejected':
      'Malipo yako {ref} ya {amount, number, money} {currency} kwa {phone} yamekataliwa na {by}: {reason}. Hakuna kilichotumwa.',
    'notify.approval.rejected.dial':
      'Yamekataliwa: {amount, number, money} {currency} kwa {phone}. Kumb {ref}. Hayakutumwa.',
    'notify.approval.expired':
      'Malipo yako {ref} ya {amount, number, money} {currency} kwa {phone} hayakuidhinishwa ndani ya saa {hours} na muda wake umeisha. Hakuna kilichotumwa.',
    'notify.approval.expired.dial':
      'Muda umeisha: {amount, number, money} {currency} kwa {phone}. Kumb {ref}. Hayakuidhinishwa.',
    'notify.code.pin':
      'PIN yako iliwekwa upya. Msimbo wako wa mara moja ni {code}: tupigie na uuweke ili kuchagua PIN mpya. Unafanya kazi mara moja, kwa saa {hours}. Usimpe mtu yeyote, hata mwendeshaji.',
    'notify.code.pin.dial': 'Msimbo {code}: uweke kuchagua PIN mpya. Mara moja, saa {hours}.',
    'notify.code.link':
      'Msimbo wako wa kuunganisha ni {code}. Utume kwa boti yetu kutoka programu yako ya gumzo ndani ya dakika {minutes}: Telegram /link {code}, WhatsApp link {code}, Slack /momo link {code}. Unafanya kazi mara moja. Usimpe mtu yeyote.',
    'notify.code.link.dial': 'Msimbo {code}: utume kwa boti. Mara moja, dakika {minutes}.',
  },
  fr: {
    'notify.payment.validated':
      'Le paiement {ref} de {amount, number, money} {currency} à {phone} a passé les contrôles.',
    'notify.payment.approval_needed':
      "Le paiement {ref} de {amount, number, money} {currency} à {phone} doit être approuvé : un approbateur de votre organisation doit l'approuver sur le portail avant l'envoi.",
    'notify.payment.approval_needed.dial':
      'Pour approbation : {amount, number, money} {currency} à {phone}. Réf {ref}.',
    'notify.payment.approval_requested':
      'Les approbateurs ont été sollicités pour le paiement {ref} de {amount, number, money} {currency} à {phone}.',
    'notify.payment.approval_requested.dial':
      'En approbation : {amount, number, money} {currency} à {phone}. Réf {ref}.',
    'notify.payment.approved':
      'Le paiement {ref} de {amount, number, money} {currency} à {phone} a été approuvé et part.',
    'notify.payment.scheduled': 'Le paiement {ref} de {amount, number, money} {currency} à {phone} est programmé.',
    'notify.payment.processed': 'Terminé : {amount, number, money} {currency} sont arrivés à {phone}. Réf {ref}.',
    'notify.payment.processed.dial': 'Terminé : {amount, number, money} {currency} arrivés à {phone}. Réf {ref}.',
    'notify.payment.processed_with_errors':
      'Le paiement {ref} de {amount, number, money} {currency} à {phone} a échoué : {reason}',
    'notify.payment.processed_with_errors.dial':
      'Échec, non payé : {amount, number, money} {currency} à {phone}. Réf {ref}. {reason}',
    'notify.payment.rejected':
      'Le paiement {ref} de {amount, number, money} {currency} à {phone} a été rejeté : {reason}',
    'notify.payment.rejected.dial':
      'Rejeté, non payé : {amount, number, money} {currency} à {phone}. Réf {ref}. {reason}',
    'notify.payment.cancelled':
      'Le paiement {ref} de {amount, number, money} {currency} à {phone} a été annulé : {reason}',
    'notify.payment.cancelled.dial':
      'Annulé, non payé : {amount, number, money} {currency} à {phone}. Réf {ref}. {reason}',
    'notify.payment.other':
      '{state, select, completed {Terminé : {amount, number, money} {currency} sont arrivés à {phone}. Réf {ref}.} other {Le paiement {ref} de {amount, number, money} {currency} à {phone} est encore en cours. Vous connaîtrez le résultat.}}',
    'notify.payment.other.dial':
      '{state, select, completed {Terminé : {amount, number, money} {currency} arrivés à {phone}. Réf {ref}.} other {En cours : {amount, number, money} {currency} à {phone}. Réf {ref}.}}',
    'notify.payment.not_made':
      "Votre paiement {ref} de {amount, number, money} {currency} à {phone} n'a PAS été fait : nous avons vérifié, le service ne l'a pas. Rien n'a été envoyé ; votre limite est rétablie. Vous pouvez payer à nouveau.",
    'notify.payment.not_made.dial':
      "PAS fait : {amount, number, money} {currency} à {phone}. Réf {ref}. Rien n'est parti. Repayez si besoin.",
    'notify.payment.recipient.queued':
      "Le paiement {ref} de {amount, number, money} {currency} à {phone} est en file d'attente au réseau et partira bientôt.",
    'notify.payment.recipient.paused':
      'Le paiement {ref} de {amount, number, money} {currency} à {phone} est suspendu : {reason}. Il partira quand le réseau reprendra.',
    'notify.payment.recipient.parked':
      'Le paiement {ref} de {amount, number, money} {currency} à {phone} est mis de côté par le réseau et sera retenté plus tard.',
    'notify.payment.recipient.paused_for_admin_action':
      'Le paiement {ref} de {amount, number, money} {currency} à {phone} est bloqué : un administrateur de votre organisation doit le débloquer sur le portail.',
    'notify.payment.recipient.paused_for_admin_action.dial':
      'Bloqué : {amount, number, money} {currency} à {phone}. Réf {ref}. Voyez votre admin.',
    'notify.collection.received':
      'Vous avez reçu {amount, number, money} {currency} de {phone}{name} pour votre demande {ref} (leur référence : {reference}).',
    'notify.collection.received.dial': 'Reçu : {amount, number, money} {currency} de {phone}. Réf {ref}.',
    'notify.request.successful': 'Votre demande {ref} de {amount, number, money} {currency} à {phone} a été payée.',
    'notify.request.successful.dial': 'Demande payée : {amount, number, money} {currency} de {phone}. Réf {ref}.',
    'notify.request.failed': 'Votre demande {ref} de {amount, number, money} {currency} à {phone} a échoué : {reason}',
    'notify.request.failed.dial': "{phone} n'a pas payé {amount, number, money} {currency}. Réf {ref}. {reason}",
    'notify.request.expired':
      'Votre demande {ref} de {amount, number, money} {currency} à {phone} a expiré sans être payée.',
    'notify.request.expired.dial':
      'Demande expirée : {amount, number, money} {currency} de {phone}. Réf {ref}. Non payée.',
    'notify.request.reversed':
      "Le paiement de votre demande {ref} de {amount, number, money} {currency} à {phone} a été annulé : l'argent est reparti.",
    'notify.request.reversed.dial':
      'Remboursé : {amount, number, money} {currency} à {phone}. Réf {ref}. Paiement de la demande annulé.',
    'notify.request.other':
      'Votre demande {ref} de {amount, number, money} {currency} à {phone} est encore ouverte. Vous saurez quand elle sera payée.',
    'notify.request.other.dial': 'Demande ouverte : {amount, number, money} {currency} de {phone}. Réf {ref}.',
    'notify.request.not_made':
      "Votre demande {ref} de {amount, number, money} {currency} à {phone} n'a PAS été faite : le service ne l'a pas. Rien n'a été demandé à {phone}. Vous pouvez redemander.",
    'notify.request.not_made.dial':
      'PAS demandé : {amount, number, money} {currency} à {phone}. Réf {ref}. Redemandez.',
    'notify.noReason': 'aucune raison donnée',
    'notify.service': 'service',
    'notify.correction.payment':
      'Correction : le paiement {ref} de {amount, number, money} {currency} à {phone} est {state, select, processed {terminé} completed {terminé} processed_with_errors {échoué} failed {échoué} refused {non effectué} rejected {rejeté} cancelled {annulé} other {encore en cours}} au service, pas {told, select, processed {terminé} completed {terminé} processed_with_errors {échoué} failed {échoué} refused {non effectué} rejected {rejeté} cancelled {annulé} other {encore en cours}} comme annoncé.',
    'notify.correction.payment.dial':
      'Correction : paiement {ref} de {amount, number, money} {currency} : {state, select, completed {terminé} failed {échoué} refused {non effectué} rejected {rejeté} cancelled {annulé} other {en cours}}.',
    'notify.correction.request':
      'Correction : votre demande {ref} de {amount, number, money} {currency} à {phone} est {state, select, successful {payée} completed {payée} refused {non effectuée} failed {échouée} expired {expirée} reversed {annulée} other {encore ouverte}} au service, pas {told, select, successful {payée} completed {payée} refused {non effectuée} failed {échouée} expired {expirée} reversed {annulée} other {encore ouverte}} comme annoncé.',
    'notify.correction.request.dial':
      'Correction : demande {ref} de {amount, number, money} {currency} : {state, select, completed {payée} failed {échouée} expired {expirée} refused {non effectuée} other {ouverte}}.',
    'notify.approval.approved':
      'Votre paiement {ref} de {amount, number, money} {currency} à {phone} a été approuvé par {by} et envoyé. Vous saurez quand il sera arrivé.',
    'notify.approval.approved.dial': 'Approuvé, envoyé : {amount, number, money} {currency} à {phone}. Réf {ref}.',
    'notify.approval.approvedBefore':
      'Votre paiement {ref} de {amount, number, money} {currency} à {phone} a été approuvé par {by} et envoyé. Vous saurez quand il sera arrivé.',
    'notify.approval.approvedBefore.dial':
      'Approuvé, envoyé : {amount, number, money} {currency} à {phone}. Réf {ref}.',
    'notify.approval.unconfirmed':
      'Votre paiement {ref} de {amount, number, money} {currency} à {phone} a été approuvé par {by} ; sa prise en compte par le service est en cours de confirmation. Ne payez pas à nouveau : vous connaîtrez le résultat.',
    'notify.approval.unconfirmed.dial':
      'Ne repayez pas : {amount, number, money} {currency} à {phone}. Réf {ref}. Approuvé, en confirmation.',
    'notify.approval.refused':
      "Votre paiement {ref} de {amount, number, money} {currency} à {phone} a été approuvé par {by} mais n'a pas pu partir ({reason}). Rien n'a été envoyé.",
    'notify.approval.refused.dial': 'Non envoyé : {amount, number, money} {currency} à {phone}. Réf {ref}. {reason}',
    'notify.approval.rejected':
      "Votre paiement {ref} de {amount, number, money} {currency} à {phone} a été rejeté par {by} : {reason}. Rien n'a été envoyé.",
    'notify.approval.rejected.dial':
      'Non approuvé : {amount, number, money} {currency} à {phone}. Réf {ref}. Non envoyé.',
    'notify.approval.expired':
      "Votre paiement {ref} de {amount, number, money} {currency} à {phone} n'a pas été approuvé en {hours} heures et a expiré. Rien n'a été envoyé.",
    'notify.approval.expired.dial':
      'Expiré : {amount, number, money} {currency} à {phone}. Réf {ref}. Non approuvé à temps.',
    'notify.code.pin':
      'Votre PIN a été réinitialisé. Votre code à usage unique est {code} : composez notre numéro et entrez-le pour choisir un nouveau PIN. Il sert une fois, pendant {hours} heures. Ne le donnez à personne, opérateurs compris.',
    'notify.code.pin.dial': 'Code {code} : entrez-le pour un nouveau PIN. Une fois, {hours} h.',
    'notify.code.link':
      'Votre code de liaison est {code}. Envoyez-le à notre bot depuis votre messagerie dans les {minutes} minutes : Telegram /link {code}, WhatsApp link {code}, Slack /momo link {code}. Il sert une fois. Ne le donnez à personne.',
    'notify.code.link.dial': 'Code {code} : envoyez-le au bot. Une fois, {minutes} min.',
  },
};

/**
 * The words of `key` in `lang` (English when that language lacks it), its params filled; an empty reason says
 * none was given. `forDial`: for the USSD inbox, shown above the menu at the next dial: the key's `.dial` twin
 * where it has one (the same outcome in fewer words, `Ref MC-…` as every USSD screen names it), shortened whole
 * to its room ({@link DIAL_NOTES_MAX}); the full words otherwise, with the service's id beside our ref.
 */
export function notifyText(lang: Lang, key: string, params: Params, options: { forDial?: boolean } = {}): string {
  const catalogue = notifyMessages[lang] ?? notifyMessages.en;
  const words = (wanted: string, values: Params): string =>
    fillTemplate(
      catalogue[wanted] ?? notifyMessages.en[wanted] ?? key,
      values.reason === '' ? { ...values, reason: catalogue['notify.noReason'] ?? '' } : values,
      isLang(lang) ? lang : 'en',
    );
  // A record that has neither ref yet (made before short refs, its create's answer lost) reads "–", never a gap.
  const ref = typeof params.ref === 'string' && params.ref !== '' ? params.ref : undefined;
  const id = typeof params.id === 'string' && params.id !== '' && params.id !== ref ? params.id : undefined;
  if (options.forDial && Object.hasOwn(notifyMessages.en, `${key}.dial`))
    return fitWhole(words(`${key}.dial`, { ...params, ref: ref ?? referenceOf({}) }), DIAL_NOTES_MAX);
  const full = words(key, {
    ...params,
    ref: referenceOf({ short_ref: ref ?? null, service_id: id ?? null }, catalogue['notify.service']),
  });
  return options.forDial ? fitWhole(full, DIAL_NOTES_MAX) : full;
}
