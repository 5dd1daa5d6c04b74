/**
 * Words of the buy-data flow (keys `data.*`), in English, Kiswahili and French. Each screen stays within a USSD page
 * (182 characters with its numbered choices); `{name}` placeholders are filled from the View's params.
 */
import { failureMessages } from '../failure.js';
import { inputMessages } from '../input.js';
import type { Lang, Messages } from '../types.js';

/** The buy-data catalogue, with the shared input reasons and failure words it shows. */
export const dataMessages: Record<Lang, Messages> = {
  en: {
    ...inputMessages.en,
    ...failureMessages.en,
    'data.askNetwork': 'Buy data. Choose the network:',
    'data.askAccount': 'Enter the Spectranet account number:',
    'data.askBundle': 'Choose a bundle on {network}:',
    'data.bundleLine': '{name} {price, number, money} {currency}',
    'data.noBundles': 'No {network} bundles are on sale now.',
    'data.accountNotFound': 'No Spectranet account has that number.',
    'data.askWhichPhone': 'Send the data to:',
    'data.myNumber': 'My number',
    'data.otherNumber': 'Another number',
    'data.askPhone': 'Enter the phone number:',
    'data.summary': 'Buy {bundle} on {network} for {phone}, {price, number, money} {currency}?',
    'data.summaryPin':
      'Buy {bundle} on {network} for {phone}, {price, number, money} {currency}? Enter your PIN to confirm:',
    'data.confirm': 'Confirm',
    'data.done': 'Bought {bundle} for {phone}. Ref: {reference}',
    'data.unconfirmed':
      'We could not confirm the purchase.{hasRef, select, yes { Ref {ref}.} other {}} Do not buy again: you will be told the result.',
    'data.submittedBefore':
      'We are checking whether this purchase went through.{hasRef, select, yes { Ref {ref}.} other {}} You will be told the result.',
    'data.notBought': 'Nothing was bought.',
    'data.left': 'Back to the menu.',
  },
  sw: {
    ...inputMessages.sw,
    ...failureMessages.sw,
    'data.askNetwork': 'Nunua data. Chagua mtandao:',
    'data.askAccount': 'Weka namba ya akaunti ya Spectranet:',
    'data.askBundle': 'Chagua kifurushi cha {network}:',
    'data.bundleLine': '{name} {price, number, money} {currency}',
    'data.noBundles': 'Hakuna vifurushi vya {network} vinavyouzwa sasa.',
    'data.accountNotFound': 'Hakuna akaunti ya Spectranet yenye namba hiyo.',
    'data.askWhichPhone': 'Tuma data kwa:',
    'data.myNumber': 'Namba yangu',
    'data.otherNumber': 'Namba nyingine',
    'data.askPhone': 'Weka namba ya simu:',
    'data.summary': 'Nunua {bundle} ya {network} kwa {phone}, {price, number, money} {currency}?',
    'data.summaryPin':
      'Nunua {bundle} ya {network} kwa {phone}, {price, number, money} {currency}? Weka PIN yako kuthibitisha:',
    'data.confirm': 'Thibitisha',
    'data.done': 'Umenunua {bundle} kwa {phone}. Kumb: {reference}',
    'data.unconfirmed':
      'Hatukuweza kuthibitisha ununuzi.{hasRef, select, yes { Kumb {ref}.} other {}} Usinunue tena: utaarifiwa matokeo.',
    'data.submittedBefore':
      'Tunakagua kama ununuzi huu umepita.{hasRef, select, yes { Kumb {ref}.} other {}} Utaarifiwa matokeo.',
    'data.notBought': 'Hakuna kilichonunuliwa.',
    'data.left': 'Rudi kwenye menyu.',
  },
  fr: {
    ...inputMessages.fr,
    ...failureMessages.fr,
    'data.askNetwork': 'Acheter des données. Choisissez le réseau :',
    'data.askAccount': 'Entrez le numéro de compte Spectranet :',
    'data.askBundle': 'Choisissez un forfait {network} :',
    'data.bundleLine': '{name} {price, number, money} {currency}',
    'data.noBundles': "Aucun forfait {network} n'est en vente pour l'instant.",
    'data.accountNotFound': "Aucun compte Spectranet n'a ce numéro.",
    'data.askWhichPhone': 'Envoyer les données à :',
    'data.myNumber': 'Mon numéro',
    'data.otherNumber': 'Un autre numéro',
    'data.askPhone': 'Entrez le numéro de téléphone :',
    'data.summary': 'Acheter {bundle} sur {network} pour {phone}, {price, number, money} {currency} ?',
    'data.summaryPin':
      'Acheter {bundle} sur {network} pour {phone}, {price, number, money} {currency} ? Entrez votre PIN pour confirmer :',
    'data.confirm': 'Confirmer',
    'data.done': 'Acheté : {bundle} pour {phone}. Réf {reference}',
    'data.unconfirmed':
      "Nous n'avons pas pu confirmer l'achat.{hasRef, select, yes { Réf {ref}.} other {}} N'achetez pas à nouveau : vous connaîtrez le résultat.",
    'data.submittedBefore':
      'Nous vérifions si cet achat est passé.{hasRef, select, yes { Réf {ref}.} other {}} Vous connaîtrez le résultat.',
    'data.notBought': "Rien n'a été acheté.",
    'data.left': 'Retour au menu.',
  },
};
