/** Words of Link a chat app (keys `link.*`), English, Kiswahili and French, with the failures it can show. */
import { failureMessages } from '../failure.js';
import type { Lang, Messages } from '../types.js';

export const linkMessages: Record<Lang, Messages> = {
  en: {
    ...failureMessages.en,
    'link.shown':
      'Your link code: {code}\nSend it to our bot within 10 minutes: Telegram /link {code}, WhatsApp link {code}, Slack /momo link {code}. It works once.',
  },
  sw: {
    ...failureMessages.sw,
    'link.shown':
      'Msimbo wako: {code}\nUtume kwa bot ndani ya dakika 10: Telegram /link {code}, WhatsApp link {code}, Slack /momo link {code}. Unatumika mara moja.',
  },
  fr: {
    ...failureMessages.fr,
    'link.shown':
      'Votre code : {code}\nEnvoyez-le au bot sous 10 minutes : Telegram /link {code}, WhatsApp link {code}, Slack /momo link {code}. Il sert une fois.',
  },
};
