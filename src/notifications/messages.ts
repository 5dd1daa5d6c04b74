/**
 * Words of the notifications pushed into chats, per language, with `{param}` placeholders.
 * Keys are `notify.<resource>.<state>`; a state without its own key uses `notify.<resource>.other`.
 */
import type { Lang, Messages } from '../../flows/types.js';

export const notifyMessages: Record<Lang, Messages> = {
  en: {
    'notify.payment.validated': 'Payment {ref} of {amount} {currency} to {phone} passed its checks.',
    'notify.payment.approval_needed': 'Payment {ref} of {amount} {currency} to {phone} needs approval.',
    'notify.payment.approval_requested': 'Approval was requested for payment {ref} of {amount} {currency} to {phone}.',
    'notify.payment.approved': 'Payment {ref} of {amount} {currency} to {phone} was approved and is being sent.',
    'notify.payment.scheduled': 'Payment {ref} of {amount} {currency} to {phone} is scheduled.',
    'notify.payment.processed': 'Done: {amount} {currency} reached {phone} (payment {ref}).',
    'notify.payment.processed_with_errors': 'Payment {ref} of {amount} {currency} to {phone} failed: {reason}',
    'notify.payment.rejected': 'Payment {ref} of {amount} {currency} to {phone} was rejected: {reason}',
    'notify.payment.cancelled': 'Payment {ref} of {amount} {currency} to {phone} was cancelled: {reason}',
    'notify.payment.other': 'Payment {ref} of {amount} {currency} to {phone} is now {state}.',
    'notify.collection.received': 'You received {amount} {currency} from {phone}{name} (ref {reference}).',
    'notify.request.successful': 'Your request of {amount} {currency} from {phone} was paid.',
    'notify.request.failed': 'Your request of {amount} {currency} from {phone} failed: {reason}',
    'notify.request.expired': 'Your request of {amount} {currency} from {phone} expired unpaid.',
    'notify.request.reversed': 'The payment for your request of {amount} {currency} from {phone} was reversed.',
    'notify.request.other': 'Your request of {amount} {currency} from {phone} is now {state}.',
    'notify.noReason': 'no reason given',
  },
  sw: {
    'notify.payment.validated': 'Malipo {ref} ya {amount} {currency} kwa {phone} yamepita ukaguzi.',
    'notify.payment.approval_needed': 'Malipo {ref} ya {amount} {currency} kwa {phone} yanahitaji idhini.',
    'notify.payment.approval_requested': 'Idhini imeombwa kwa malipo {ref} ya {amount} {currency} kwa {phone}.',
    'notify.payment.approved': 'Malipo {ref} ya {amount} {currency} kwa {phone} yameidhinishwa na yanatumwa.',
    'notify.payment.scheduled': 'Malipo {ref} ya {amount} {currency} kwa {phone} yamepangwa.',
    'notify.payment.processed': 'Imekamilika: {amount} {currency} imefika kwa {phone} (malipo {ref}).',
    'notify.payment.processed_with_errors': 'Malipo {ref} ya {amount} {currency} kwa {phone} yameshindwa: {reason}',
    'notify.payment.rejected': 'Malipo {ref} ya {amount} {currency} kwa {phone} yamekataliwa: {reason}',
    'notify.payment.cancelled': 'Malipo {ref} ya {amount} {currency} kwa {phone} yameghairiwa: {reason}',
    'notify.payment.other': 'Malipo {ref} ya {amount} {currency} kwa {phone} sasa ni {state}.',
    'notify.collection.received': 'Umepokea {amount} {currency} kutoka {phone}{name} (kumb. {reference}).',
    'notify.request.successful': 'Ombi lako la {amount} {currency} kutoka {phone} limelipwa.',
    'notify.request.failed': 'Ombi lako la {amount} {currency} kutoka {phone} limeshindwa: {reason}',
    'notify.request.expired': 'Ombi lako la {amount} {currency} kutoka {phone} limeisha muda bila kulipwa.',
    'notify.request.reversed': 'Malipo ya ombi lako la {amount} {currency} kutoka {phone} yamerejeshwa.',
    'notify.request.other': 'Ombi lako la {amount} {currency} kutoka {phone} sasa ni {state}.',
    'notify.noReason': 'hakuna sababu iliyotolewa',
  },
};
