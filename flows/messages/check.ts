/**
 * Words of the check-a-collection flow (keys `check.*`), English and Swahili, with the input and failure
 * reasons it can show. Each screen, with its numbered choices, fits a 182-character USSD screen.
 */
import { failureMessages } from '../failure.js';
import { inputMessages } from '../input.js';
import type { Lang, Messages } from '../types.js';

/** The check flow's catalogue, by language. */
export const checkMessages: Record<Lang, Messages> = {
  en: {
    ...inputMessages.en,
    ...failureMessages.en,
    'check.chooseMode': 'Check a collection:',
    'check.mode.latest': 'Latest collections',
    'check.mode.find': 'Find a payment I received',
    'check.chooseCollection': 'Latest collections. Pick one for details:',
    'check.collectionLine': '{amount} {currency} {date}',
    'check.askAmount': 'Enter the amount you received:',
    'check.askTransactionId': 'Enter the transaction id from the confirmation SMS:',
    'check.askPhone': "Enter the sender's full phone number:",
    'check.details': '{status}: {amount} {currency} from {sender} on {date}. Ref: {reference}. Tx: {transactionId}',
    'check.noneYet': 'No collections yet.',
    'check.noMatch': 'No collection matches that amount, transaction id and number.',
    'check.refused': 'The service could not search with these details ({fields}). Check them and try again.',
  },
  sw: {
    ...inputMessages.sw,
    ...failureMessages.sw,
    'check.chooseMode': 'Angalia malipo yaliyopokelewa:',
    'check.mode.latest': 'Malipo ya karibuni',
    'check.mode.find': 'Tafuta malipo niliyopokea',
    'check.chooseCollection': 'Malipo ya karibuni. Chagua moja kuona undani:',
    'check.collectionLine': '{amount} {currency} {date}',
    'check.askAmount': 'Weka kiasi ulichopokea:',
    'check.askTransactionId': 'Weka namba ya muamala kutoka kwenye SMS ya uthibitisho:',
    'check.askPhone': 'Weka namba kamili ya simu ya mtumaji:',
    'check.details': '{status}: {amount} {currency} kutoka {sender} tarehe {date}. Kumb: {reference}. Muamala: {transactionId}',
    'check.noneYet': 'Bado hakuna malipo yaliyopokelewa.',
    'check.noMatch': 'Hakuna malipo yanayolingana na kiasi, namba ya muamala na namba hiyo.',
    'check.refused': 'Huduma haikuweza kutafuta kwa taarifa hizi ({fields}). Zikague ujaribu tena.',
  },
};
