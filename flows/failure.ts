/**
 * A failed service call in words a person understands. Every flow maps the ServiceFailure it caught
 * with {@link failureText}, overriding the words where its own context matters (a lost answer to a
 * payment is not the same as a lost answer to a read).
 */
import { isServiceFailure, type Lang, type Messages, type ServiceFailure, type Text } from './types.js';

/** Catalogue keys a flow uses instead of the generic `failure.<code>` ones. */
export type FailureKeys = Partial<Record<ServiceFailure['code'], string>>;

/**
 * The text telling what went wrong: `overrides[code]` or `failure.<code>`. Validation names the
 * refused fields (`{fields}`); a wrong PIN carries the attempts left (`{left}`, read from the message)
 * when the service said so. Anything that is not a ServiceFailure reads as `unknown`.
 */
export function failureText(error: unknown, overrides: FailureKeys = {}): Text {
  const failure: ServiceFailure = isServiceFailure(error) ? error : { code: 'unknown' };
  const key = overrides[failure.code] ?? `failure.${failure.code}`;
  if (failure.code === 'validation') {
    return { key, params: { fields: Object.keys(failure.fields ?? {}).join(', ') || '-' } };
  }
  if (failure.code === 'pin_wrong') {
    const left = /\d+/.exec(failure.message ?? '')?.[0];
    return left === undefined ? { key } : { key: `${key}Left`, params: { left: Number(left) } };
  }
  return { key };
}

/** The generic words; flows spread them into their catalogue like `inputMessages`. */
export const failureMessages: Record<Lang, Messages> = {
  en: {
    'failure.validation': 'The service refused these details: {fields}. Please start again and check them.',
    'failure.duplicate': 'This was already sent. You will be notified of the result.',
    'failure.rate_limited': 'The service is busy. Please try again in a minute.',
    'failure.unauthenticated': 'The service did not accept our credentials. Please tell the operator.',
    'failure.forbidden': 'The service does not allow this operation for us.',
    'failure.not_found': 'The service could not find what we asked for.',
    'failure.service': 'The service has a problem right now. Please try again later.',
    'failure.connection': 'We could not reach the service. Please try again later.',
    'failure.not_allowed': 'You are not allowed to do this. Ask the operator for access.',
    'failure.limit_exceeded': 'This is more than your limit allows.',
    'failure.pin_wrong': 'Wrong PIN. Try again.',
    'failure.pin_wrongLeft': 'Wrong PIN. {left} attempts left.',
    'failure.pin_locked': 'Your PIN is locked after too many wrong attempts. Ask the operator to unlock it.',
    'failure.approvals_unavailable': 'This payment needs approval, but the approvals channel could not be reached. Nothing was sent: please try again.',
    'failure.not_recorded': 'Nothing was sent: we could not record this just now. Please try again shortly.',
    'failure.unknown': 'Something went wrong. Please try again later.',
  },
  sw: {
    'failure.validation': 'Huduma imekataa taarifa hizi: {fields}. Tafadhali anza upya na uzikague.',
    'failure.duplicate': 'Hili tayari limetumwa. Utaarifiwa matokeo.',
    'failure.rate_limited': 'Huduma ina shughuli nyingi. Tafadhali jaribu tena baada ya dakika moja.',
    'failure.unauthenticated': 'Huduma haikukubali vitambulisho vyetu. Tafadhali mjulishe mwendeshaji.',
    'failure.forbidden': 'Huduma hairuhusu operesheni hii kwetu.',
    'failure.not_found': 'Huduma haikupata tulichoomba.',
    'failure.service': 'Huduma ina tatizo sasa. Tafadhali jaribu tena baadaye.',
    'failure.connection': 'Hatukuweza kufikia huduma. Tafadhali jaribu tena baadaye.',
    'failure.not_allowed': 'Huruhusiwi kufanya hili. Omba ruhusa kwa mwendeshaji.',
    'failure.limit_exceeded': 'Hiki ni zaidi ya kikomo chako.',
    'failure.pin_wrong': 'PIN si sahihi. Jaribu tena.',
    'failure.pin_wrongLeft': 'PIN si sahihi. Majaribio {left} yamebaki.',
    'failure.pin_locked': 'PIN yako imefungwa baada ya makosa mengi. Omba mwendeshaji aifungue.',
    'failure.approvals_unavailable': 'Malipo haya yanahitaji idhini, lakini hatukuweza kufikia idhaa ya idhini. Hakuna kilichotumwa: tafadhali jaribu tena.',
    'failure.not_recorded': 'Hakuna kilichotumwa: hatukuweza kuliandika sasa hivi. Tafadhali jaribu tena baada ya muda mfupi.',
    'failure.unknown': 'Kuna hitilafu. Tafadhali jaribu tena baadaye.',
  },
};
