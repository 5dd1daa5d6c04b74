/**
 * A failed service call in words a person understands. Every flow maps the ServiceFailure it caught
 * with {@link failureText}, overriding the words where its own context matters (a lost answer to a
 * payment is not the same as a lost answer to a read).
 */
import { refParams } from './calls.js';
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
  if (failure.code === 'limit_exceeded' && failure.limit) {
    const { per, max, spent, currency } = failure.limit;
    return {
      key: `failure.limit_exceeded.${per}`,
      params: { max, currency, ...(spent !== undefined ? { spent } : {}) },
    };
  }
  if (failure.code === 'pin_wrong') {
    const left = /\d+/.exec(failure.message ?? '')?.[0];
    return left === undefined ? { key } : { key: `${key}Left`, params: { left: Number(left) } };
  }
  return { key };
}

/**
 * {@link failureText} for a create, whose failure may leave it made (its words `unconfirmed`): those words name our
 * short ref (`{hasRef, select, yes { Ref {ref}.} other {}}`) when the call had one.
 */
export function createFailureText(error: unknown, overrides: FailureKeys, unconfirmed: string): Text {
  const text = failureText(error, overrides);
  if (text.key !== unconfirmed) return text;
  return { ...text, params: { ...text.params, ...refParams(isServiceFailure(error) ? error : undefined) } };
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
    'failure.limit_exceeded.payment': 'You can send at most {max, number, money} {currency} in one payment.',
    'failure.limit_exceeded.day':
      '{max, plural, =0 {You cannot send more {currency} today ({spent, number, money} already sent).} other {You can send at most {max, number, money} {currency} today ({spent, number, money} already sent).}}',
    'failure.pin_wrong': 'Wrong PIN. Try again.',
    'failure.pin_wrongLeft': 'Wrong PIN. {left, plural, one {# attempt left.} other {# attempts left.}}',
    'failure.pin_locked': 'Your PIN is locked after too many wrong attempts. Ask the operator to unlock it.',
    'failure.approvals_unavailable':
      'This payment needs approval, but the approvals channel could not be reached. Nothing was sent: please try again.',
    'failure.not_recorded': 'Nothing was sent: we could not record this just now. Please try again shortly.',
    'failure.pin_weak': 'That PIN is too easy to guess. Choose another.',
    'failure.pin_mismatch': 'The two PINs were not the same.',
    'failure.code_wrong': 'That code is not right. Check it and try again.',
    'failure.code_expired': 'Your one-time code has expired or was used. Ask the operator for a new one.',
    'failure.too_many_codes': 'Too many codes made. Try again in 15 minutes.',
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
    'failure.limit_exceeded.payment': 'Unaweza kutuma hadi {max, number, money} {currency} kwa malipo moja.',
    'failure.limit_exceeded.day':
      '{max, plural, =0 {Huwezi kutuma {currency} zaidi leo ({spent, number, money} zimeshatumwa).} other {Unaweza kutuma hadi {max, number, money} {currency} leo ({spent, number, money} zimeshatumwa).}}',
    'failure.pin_wrong': 'PIN si sahihi. Jaribu tena.',
    'failure.pin_wrongLeft': 'PIN si sahihi. {left, plural, one {Limebaki jaribio #.} other {Yamebaki majaribio #.}}',
    'failure.pin_locked': 'PIN yako imefungwa baada ya makosa mengi. Omba mwendeshaji aifungue.',
    'failure.approvals_unavailable':
      'Malipo haya yanahitaji idhini, lakini hatukuweza kufikia idhaa ya idhini. Hakuna kilichotumwa: tafadhali jaribu tena.',
    'failure.not_recorded':
      'Hakuna kilichotumwa: hatukuweza kuliandika sasa hivi. Tafadhali jaribu tena baada ya muda mfupi.',
    'failure.pin_weak': 'PIN hiyo ni rahisi mno kukisia. Chagua nyingine.',
    'failure.pin_mismatch': 'PIN mbili hazikufanana.',
    'failure.code_wrong': 'Msimbo huo si sahihi. Uhakiki na ujaribu tena.',
    'failure.code_expired': 'Msimbo wako wa mara moja umeisha muda au umetumika. Omba mwendeshaji mpya.',
    'failure.too_many_codes': 'Misimbo mingi mno imetengenezwa. Jaribu tena baada ya dakika 15.',
    'failure.unknown': 'Kuna hitilafu. Tafadhali jaribu tena baadaye.',
  },
  fr: {
    'failure.validation': 'Le service a refusé ces informations : {fields}. Veuillez recommencer en les vérifiant.',
    'failure.duplicate': 'Ceci a déjà été envoyé. Vous serez informé du résultat.',
    'failure.rate_limited': 'Le service est occupé. Réessayez dans une minute.',
    'failure.unauthenticated': "Le service n'a pas accepté nos identifiants. Prévenez l'opérateur.",
    'failure.forbidden': 'Le service ne nous permet pas cette opération.',
    'failure.not_found': "Le service n'a pas trouvé ce que nous avons demandé.",
    'failure.service': 'Le service a un problème en ce moment. Réessayez plus tard.',
    'failure.connection': "Nous n'avons pas pu joindre le service. Réessayez plus tard.",
    'failure.not_allowed': "Vous n'avez pas le droit de faire ceci. Demandez l'accès à l'opérateur.",
    'failure.limit_exceeded': 'Ceci dépasse votre limite.',
    'failure.limit_exceeded.payment': 'Vous pouvez envoyer au plus {max, number, money} {currency} par paiement.',
    'failure.limit_exceeded.day':
      "{max, plural, =0 {Vous ne pouvez plus envoyer de {currency} aujourd'hui ({spent, number, money} déjà envoyés).} other {Vous pouvez envoyer au plus {max, number, money} {currency} aujourd'hui ({spent, number, money} déjà envoyés).}}",
    'failure.pin_wrong': 'PIN incorrect. Réessayez.',
    'failure.pin_wrongLeft': 'PIN incorrect. {left, plural, one {Il reste # essai.} other {Il reste # essais.}}',
    'failure.pin_locked': "Votre PIN est bloqué après trop d'erreurs. Demandez à l'opérateur de le débloquer.",
    'failure.approvals_unavailable':
      "Ce paiement doit être approuvé, mais le canal d'approbation est injoignable. Rien n'a été envoyé : réessayez.",
    'failure.not_recorded':
      "Rien n'a été envoyé : nous n'avons pas pu l'enregistrer pour l'instant. Réessayez dans un moment.",
    'failure.pin_weak': 'Ce PIN est trop facile à deviner. Choisissez-en un autre.',
    'failure.pin_mismatch': 'Les deux PIN ne sont pas les mêmes.',
    'failure.code_wrong': "Ce code n'est pas le bon. Vérifiez-le et réessayez.",
    'failure.code_expired': "Votre code à usage unique a expiré ou a servi. Demandez-en un nouveau à l'opérateur.",
    'failure.too_many_codes': 'Trop de codes demandés. Réessayez dans 15 minutes.',
    'failure.unknown': 'Une erreur est survenue. Réessayez plus tard.',
  },
};
