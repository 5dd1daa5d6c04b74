/**
 * Words of the exam-pin flow (keys `pin.*`), in English, Kiswahili and French. Each screen stays within a USSD page
 * (182 characters with its numbered choices); `{name}` placeholders are filled from the View's params.
 */
import { failureMessages } from '../failure.js';
import { inputMessages } from '../input.js';
import type { Lang, Messages } from '../types.js';

/** The exam-pin catalogue, with the shared input reasons and failure words it shows. */
export const pinMessages: Record<Lang, Messages> = {
  en: {
    ...inputMessages.en,
    ...failureMessages.en,
    'pin.askService': 'Buy an exam pin. Choose the exam:',
    'pin.askBundle': 'Choose the {service} pin:',
    'pin.bundleLine': '{name} {amount, number, money} {currency}',
    'pin.noBundles': 'No {service} pins are on sale now.',
    'pin.askQuantity': '{bundle}: how many?',
    'pin.askCandidate': 'Which candidate?',
    'pin.useCandidate': 'Use {name} ({code})',
    'pin.anotherCode': 'Another code',
    'pin.askCode': "Enter the candidate's {service} confirmation code:",
    'pin.codeNotFound': 'No candidate has that code. Check it and try again.',
    'pin.summary': 'Buy {quantity} x {bundle} for {name}? Total {total, number, money} {currency}.',
    'pin.summaryPin':
      'Buy {quantity} x {bundle} for {name}? Total {total, number, money} {currency}. Enter your PIN to confirm:',
    'pin.confirm': 'Confirm',
    'pin.done': 'Bought for {name}. Pins: {pins}. Ref: {reference}',
    'pin.doneMasked': 'Bought for {name}. {count, plural, one {# pin} other {# pins}} (hidden). Ref: {reference}',
    'pin.unconfirmed':
      'We could not confirm the purchase.{hasRef, select, yes { Ref {ref}.} other {}} Do not buy again: you will be told the result.',
    'pin.submittedBefore':
      'We are checking whether this purchase went through.{hasRef, select, yes { Ref {ref}.} other {}} You will be told the result.',
    'pin.notBought': 'Nothing was bought.',
    'pin.left': 'Back to the menu.',
  },
  sw: {
    ...inputMessages.sw,
    ...failureMessages.sw,
    'pin.askService': 'Nunua PIN ya mtihani. Chagua mtihani:',
    'pin.askBundle': 'Chagua PIN ya {service}:',
    'pin.bundleLine': '{name} {amount, number, money} {currency}',
    'pin.noBundles': 'Hakuna PIN za {service} zinazouzwa sasa.',
    'pin.askQuantity': '{bundle}: unataka ngapi?',
    'pin.askCandidate': 'Mtahiniwa yupi?',
    'pin.useCandidate': 'Tumia {name} ({code})',
    'pin.anotherCode': 'Namba nyingine',
    'pin.askCode': 'Weka namba ya uthibitisho ya mtahiniwa wa {service}:',
    'pin.codeNotFound': 'Hakuna mtahiniwa mwenye namba hiyo. Ikague ujaribu tena.',
    'pin.summary': 'Nunua {quantity} x {bundle} kwa {name}? Jumla {total, number, money} {currency}.',
    'pin.summaryPin':
      'Nunua {quantity} x {bundle} kwa {name}? Jumla {total, number, money} {currency}. Weka PIN yako kuthibitisha:',
    'pin.confirm': 'Thibitisha',
    'pin.done': 'Imenunuliwa kwa {name}. PIN: {pins}. Kumb: {reference}',
    'pin.doneMasked':
      'Imenunuliwa kwa {name}. {count, plural, one {PIN # (imefichwa)} other {PIN # (zimefichwa)}}. Kumb: {reference}',
    'pin.unconfirmed':
      'Hatukuweza kuthibitisha ununuzi.{hasRef, select, yes { Kumb {ref}.} other {}} Usinunue tena: utaarifiwa matokeo.',
    'pin.submittedBefore':
      'Tunakagua kama ununuzi huu umepita.{hasRef, select, yes { Kumb {ref}.} other {}} Utaarifiwa matokeo.',
    'pin.notBought': 'Hakuna kilichonunuliwa.',
    'pin.left': 'Rudi kwenye menyu.',
  },
  fr: {
    ...inputMessages.fr,
    ...failureMessages.fr,
    'pin.askService': "Acheter un PIN d'examen. Choisissez l'examen :",
    'pin.askBundle': 'Choisissez un PIN {service} :',
    'pin.bundleLine': '{name} {amount, number, money} {currency}',
    'pin.noBundles': "Aucun PIN {service} n'est en vente pour l'instant.",
    'pin.askQuantity': '{bundle} : combien ?',
    'pin.askCandidate': 'Quel candidat ?',
    'pin.useCandidate': 'Utiliser {name} ({code})',
    'pin.anotherCode': 'Un autre code',
    'pin.askCode': 'Entrez le code de confirmation {service} du candidat :',
    'pin.codeNotFound': "Aucun candidat n'a ce code. Vérifiez-le et réessayez.",
    'pin.summary': 'Acheter {quantity} x {bundle} pour {name} ? Total {total, number, money} {currency}.',
    'pin.summaryPin':
      'Acheter {quantity} x {bundle} pour {name} ? Total {total, number, money} {currency}. Entrez votre PIN pour confirmer :',
    'pin.confirm': 'Confirmer',
    'pin.done': 'Acheté pour {name}. PIN : {pins}. Réf {reference}',
    'pin.doneMasked':
      'Acheté pour {name}. {count, plural, one {# PIN (masqué)} other {# PIN (masqués)}}. Réf {reference}',
    'pin.unconfirmed':
      "Nous n'avons pas pu confirmer l'achat.{hasRef, select, yes { Réf {ref}.} other {}} N'achetez pas à nouveau : vous connaîtrez le résultat.",
    'pin.submittedBefore':
      'Nous vérifions si cet achat est passé.{hasRef, select, yes { Réf {ref}.} other {}} Vous connaîtrez le résultat.',
    'pin.notBought': "Rien n'a été acheté.",
    'pin.left': 'Retour au menu.',
  },
};
