/** Words of the main menu (keys `menu.*`), in English and Swahili. */
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
    'menu.language': 'Language / Lugha',
    'menu.chooseLanguage': 'Choose your language:',
    'menu.lang.en': 'English',
    'menu.lang.sw': 'Kiswahili',
  },
  sw: {
    'menu.title': 'Ungependa kufanya nini?',
    'menu.titleLanguageOnly': 'Hakuna huduma za malipo zilizo wazi kwako. Bado unaweza kuchagua lugha.',
    'menu.flow.pay': 'Mlipe mtu',
    'menu.flow.request': 'Omba pesa',
    'menu.flow.check': 'Kagua malipo uliyopokea',
    'menu.flow.data': 'Nunua data',
    'menu.flow.pin': 'Nunua PIN ya mtihani',
    'menu.language': 'Language / Lugha',
    'menu.chooseLanguage': 'Chagua lugha yako:',
    'menu.lang.en': 'English',
    'menu.lang.sw': 'Kiswahili',
  },
};
