/** Words of the main menu (keys `menu.*`), in English, Kiswahili and French. */
import type { Lang, Messages } from '../types.js';

export const menuMessages: Record<Lang, Messages> = {
  en: {
    'menu.title': 'What would you like to do?',
    'menu.titleLanguageOnly': 'No payment options are open to you. You can still choose your language.',
    'menu.flow.pay': 'Pay someone',
    'menu.flow.request': 'Request money',
    'menu.flow.check': 'Check a payment received',
    'menu.flow.data': 'Buy data',
    'menu.flow.pin': 'Buy an exam PIN',
    'menu.language': 'Language / Lugha / Langue',
    'menu.chooseLanguage': 'Choose your language:',
    'menu.lang.en': 'English',
    'menu.lang.sw': 'Kiswahili',
    'menu.lang.fr': 'Français',
  },
  sw: {
    'menu.title': 'Ungependa kufanya nini?',
    'menu.titleLanguageOnly': 'Hakuna huduma za malipo zilizo wazi kwako. Bado unaweza kuchagua lugha.',
    'menu.flow.pay': 'Mlipe mtu',
    'menu.flow.request': 'Omba pesa',
    'menu.flow.check': 'Kagua malipo uliyopokea',
    'menu.flow.data': 'Nunua data',
    'menu.flow.pin': 'Nunua PIN ya mtihani',
    'menu.language': 'Language / Lugha / Langue',
    'menu.chooseLanguage': 'Chagua lugha yako:',
    'menu.lang.en': 'English',
    'menu.lang.sw': 'Kiswahili',
    'menu.lang.fr': 'Français',
  },
  fr: {
    'menu.title': 'Que voulez-vous faire ?',
    'menu.titleLanguageOnly':
      'Aucun service de paiement ne vous est ouvert. Vous pouvez quand même choisir votre langue.',
    'menu.flow.pay': "Payer quelqu'un",
    'menu.flow.request': "Demander de l'argent",
    'menu.flow.check': 'Vérifier un paiement reçu',
    'menu.flow.data': 'Acheter des données',
    'menu.flow.pin': "Acheter un PIN d'examen",
    'menu.language': 'Language / Lugha / Langue',
    'menu.chooseLanguage': 'Choisissez votre langue :',
    'menu.lang.en': 'English',
    'menu.lang.sw': 'Kiswahili',
    'menu.lang.fr': 'Français',
  },
};
