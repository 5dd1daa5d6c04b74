/**
 * Words of the check-a-collection flow (keys `check.*`), English, Kiswahili and French, with the input and failure
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
    'check.collectionLine': '{amount, number, money} {currency} {date}',
    'check.askAmount': 'Enter the amount you received:',
    'check.askTransactionId': 'Enter the transaction id from the confirmation SMS:',
    'check.askPhone': "Enter the sender's full phone number:",
    'check.details':
      '{status, select, successful {Received} cashed_out {Received, cashed out} pending {Waiting} failed {Failed} other {Not confirmed}}: {amount, number, money} {currency} from {sender} on {date}. Ref: {reference}. Tx: {transactionId}',
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
    'check.chooseMode': 'Vérifier un encaissement :',
    'check.mode.latest': 'Derniers encaissements',
    'check.mode.find': 'Retrouver un paiement reçu',
    'check.chooseCollection': 'Derniers encaissements. Choisissez-en un :',
    'check.collectionLine': '{amount, number, money} {currency} {date}',
    'check.askAmount': 'Entrez le montant reçu :',
    'check.askTransactionId': 'Entrez le numéro de transaction du SMS de confirmation :',
    'check.askPhone': "Entrez le numéro complet de l'expéditeur :",
    'check.details':
      '{status, select, successful {Reçu} cashed_out {Reçu, retiré} pending {En attente} failed {Échoué} other {Non confirmé}} : {amount, number, money} {currency} de {sender} le {date}. Réf : {reference}. Trans. : {transactionId}',
    'check.noneYet': "Pas encore d'encaissement.",
    'check.noMatch': 'Aucun encaissement ne correspond à ce montant, ce numéro de transaction et ce numéro.',
    'check.refused': "Le service n'a pas pu chercher avec ces informations ({fields}). Vérifiez-les et réessayez.",
  },
};
