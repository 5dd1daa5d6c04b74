/**
 * Words of the request-money flow (keys `request.*`), English and Swahili, with the input and failure
 * reasons it can show. Each screen, with its numbered choices, fits a 182-character USSD screen.
 */
import { failureMessages } from '../failure.js';
import { inputMessages } from '../input.js';
import type { Lang, Messages } from '../types.js';

/** The request flow's catalogue, by language. */
export const requestMessages: Record<Lang, Messages> = {
  en: {
    ...inputMessages.en,
    ...failureMessages.en,
    'request.askPhone': 'Enter the phone number of the person who should pay you:',
    'request.askAmount': 'Enter the amount to request:',
    'request.chooseCurrency': 'Choose the currency:',
    'request.askReason': 'Enter a short reason they will see (networks may cut it past 19 characters):',
    'request.reasonLong': 'Networks may show only the first {max} characters: "{shown}".',
    'request.askInstructions': 'Send them instructions on how to pay?',
    'request.summary': 'Ask {phone} to pay {amount} {currency} for "{reason}"?',
    'request.summaryWithInstructions': 'Ask {phone} to pay {amount} {currency} for "{reason}", with instructions?',
    'request.confirm': 'Send request',
    'request.cancel': 'Cancel',
    'request.created': 'Request {id} sent (status: {status}). You will be notified when the money arrives.',
    'request.createdWithCode':
      'Request {id} sent (status: {status}). They can pay with code {mfscode}. You will be notified when the money arrives.',
    'request.submittedBefore': 'Your request was already sent earlier. You will be notified when the money arrives.',
    'request.unconfirmed':
      'We could not confirm the request was sent. Do not send it again; you will be notified if money arrives.',
    'request.refused': 'The service refused the request ({fields}). Nothing was sent. Please check the details and start again.',
    'request.cancelled': 'Request cancelled. Nothing was sent.',
  },
  sw: {
    ...inputMessages.sw,
    ...failureMessages.sw,
    'request.askPhone': 'Weka namba ya simu ya mtu anayepaswa kukulipa:',
    'request.askAmount': 'Weka kiasi unachoomba:',
    'request.chooseCurrency': 'Chagua sarafu:',
    'request.askReason': 'Weka sababu fupi atakayoiona (mitandao inaweza kuikata zaidi ya herufi 19):',
    'request.reasonLong': 'Mitandao inaweza kuonyesha herufi {max} za kwanza tu: "{shown}".',
    'request.askInstructions': 'Atumiwe maelekezo ya jinsi ya kulipa?',
    'request.summary': 'Omba {phone} alipe {amount} {currency} kwa "{reason}"?',
    'request.summaryWithInstructions': 'Omba {phone} alipe {amount} {currency} kwa "{reason}", pamoja na maelekezo?',
    'request.confirm': 'Tuma ombi',
    'request.cancel': 'Ghairi',
    'request.created': 'Ombi {id} limetumwa (hali: {status}). Utaarifiwa pesa ikifika.',
    'request.createdWithCode': 'Ombi {id} limetumwa (hali: {status}). Anaweza kulipa kwa msimbo {mfscode}. Utaarifiwa pesa ikifika.',
    'request.submittedBefore': 'Ombi lako lilishatumwa awali. Utaarifiwa pesa ikifika.',
    'request.unconfirmed': 'Hatukuweza kuthibitisha kuwa ombi limetumwa. Usilitume tena; utaarifiwa pesa ikifika.',
    'request.refused': 'Huduma imekataa ombi ({fields}). Hakuna kilichotumwa. Kagua taarifa uanze upya.',
    'request.cancelled': 'Ombi limeghairiwa. Hakuna kilichotumwa.',
  },
};
