/**
 * Words of the check-a-payment-received flow (keys `check.*`), English, Kiswahili and French, with the input and failure
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
    'check.chooseMode': 'Check a payment received:',
    'check.mode.latest': 'Latest payments received',
    'check.mode.find': 'Find a payment I received',
    'check.chooseCollection': 'Latest payments received. Pick one for details:',
    'check.collectionLine': '{amount, number, money} {currency} {date}',
    'check.askAmount': 'Enter the amount you received:',
    'check.askTransactionId': 'Enter the transaction id from the confirmation SMS:',
    'check.askPhone': "Enter the sender's full phone number:",
    'check.details':
      '{status, select, successful {Received} cashed_out {Received, cashed out} pending {Waiting} failed {Failed} other {Not confirmed}}: {amount, number, money} {currency} from {sender} on {date}. Ref: {reference}. Tx: {transactionId}',
    'check.noneYet': 'No payments received yet.',
    'check.noMatch': 'No payment received matches that amount, transaction id and number.',
    'check.refused': 'The service could not search with these details ({fields}). Check them and try again.',
  },
  sw: {
    ...inputMessages.sw,
    ...failureMessages.sw,
    'check.chooseMode': 'Kagua malipo uliyopokea:',
    'check.mode.latest': 'Malipo ya karibuni',
    'check.mode.find': 'Tafuta malipo niliyopokea',
    'check.chooseCollection': 'Malipo ya karibuni. Chagua moja kuona undani:',
    'check.collectionLine': '{amount, number, money} {currency} {date}',
    'check.askAmount': 'Weka kiasi ulichopokea:',
    'check.askTransactionId': 'Weka namba ya muamala kutoka kwenye SMS ya uthibitisho:',
    'check.askPhone': 'Weka namba kamili ya simu ya mtumaji:',
    'check.details':
      '{status, select, successful {Imepokelewa} cashed_out {Imepokelewa, imetolewa} pending {Inasubiri} failed {Imeshindwa} other {Haijathibitishwa}}: {amount, number, money} {currency} kutoka {sender} tarehe {date}. Kumb: {reference}. Muamala: {transactionId}',
    'check.noneYet': 'Bado hakuna malipo yaliyopokelewa.',
    'check.noMatch': 'Hakuna malipo yanayolingana na kiasi, namba ya muamala na namba hiyo.',
    'check.refused': 'Huduma haikuweza kutafuta kwa taarifa hizi ({fields}). Zikague ujaribu tena.',
  },
  fr: {
    ...inputMessages.fr,
    ...failureMessages.fr,
    'check.chooseMode': 'Vérifier un paiement reçu :',
    'check.mode.latest': 'Derniers paiements reçus',
    'check.mode.find': 'Retrouver un paiement reçu',
    'check.chooseCollection': 'Derniers paiements reçus. Choisissez-en un :',
    'check.collectionLine': '{amount, number, money} {currency} {date}',
    'check.askAmount': 'Entrez le montant reçu :',
    'check.askTransactionId': 'Entrez le numéro de transaction du SMS de confirmation :',
    'check.askPhone': "Entrez le numéro complet de l'expéditeur :",
    'check.details':
      '{status, select, successful {Reçu} cashed_out {Reçu, retiré} pending {En attente} failed {Échoué} other {Non confirmé}} : {amount, number, money} {currency} de {sender} le {date}. Réf : {reference}. Trans. : {transactionId}',
    'check.noneYet': 'Pas encore de paiement reçu.',
    'check.noMatch': 'Aucun paiement reçu ne correspond à ce montant, ce numéro de transaction et ce numéro.',
    'check.refused': "Le service n'a pas pu chercher avec ces informations ({fields}). Vérifiez-les et réessayez.",
  },
};
