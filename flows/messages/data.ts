/**
 * Words of the buy-data flow (keys `data.*`), in English and Swahili. Each screen stays within a USSD page
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
    'data.askBundle': 'Choose a {network} bundle:',
    'data.noBundles': 'No {network} bundles are on sale now.',
    'data.accountNotFound': 'No Spectranet account has that number.',
    'data.askWhichPhone': 'Send the data to:',
    'data.myNumber': 'My number',
    'data.otherNumber': 'Another number',
    'data.askPhone': 'Enter the phone number:',
    'data.summary': 'Buy {bundle} on {network} for {phone}, {price} {currency}?',
    'data.summaryPin': 'Buy {bundle} on {network} for {phone}, {price} {currency}? Enter your PIN to confirm:',
    'data.confirm': 'Confirm',
    'data.done': 'Bought {bundle} for {phone}. Ref: {reference}',
    'data.unconfirmed': 'We could not confirm the purchase. Do not buy again: you will be told the result.',
    'data.submittedBefore': 'This purchase was already made earlier. You will be told the result.',
    'data.notBought': 'Nothing was bought.',
    'data.left': 'Back to the menu.',
  },
  sw: {
    ...inputMessages.sw,
    ...failureMessages.sw,
    'data.askNetwork': 'Nunua data. Chagua mtandao:',
    'data.askAccount': 'Weka namba ya akaunti ya Spectranet:',
    'data.askBundle': 'Chagua kifurushi cha {network}:',
    'data.noBundles': 'Hakuna vifurushi vya {network} vinavyouzwa sasa.',
    'data.accountNotFound': 'Hakuna akaunti ya Spectranet yenye namba hiyo.',
    'data.askWhichPhone': 'Tuma data kwa:',
    'data.myNumber': 'Namba yangu',
    'data.otherNumber': 'Namba nyingine',
    'data.askPhone': 'Weka namba ya simu:',
    'data.summary': 'Nunua {bundle} ya {network} kwa {phone}, {price} {currency}?',
    'data.summaryPin': 'Nunua {bundle} ya {network} kwa {phone}, {price} {currency}? Weka PIN yako kuthibitisha:',
    'data.confirm': 'Thibitisha',
    'data.done': 'Umenunua {bundle} kwa {phone}. Kumb: {reference}',
    'data.unconfirmed': 'Hatukuweza kuthibitisha ununuzi. Usinunue tena: utaarifiwa matokeo.',
    'data.submittedBefore': 'Ununuzi huu ulishafanyika awali. Utaarifiwa matokeo.',
    'data.notBought': 'Hakuna kilichonunuliwa.',
    'data.left': 'Rudi kwenye menyu.',
  },
};
