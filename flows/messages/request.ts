/**
 * Words of the request-money flow (keys `request.*`), English, Kiswahili and French, with the input and failure
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
    'request.summary': 'Ask {phone} to pay {amount, number, money} {currency} for "{reason}"?',
    'request.summaryWithInstructions':
      'Ask {phone} to pay {amount, number, money} {currency} for "{reason}", with instructions?',
    'request.confirm': 'Send request',
    'request.cancel': 'Cancel',
    'request.created':
      'Asked {phone} to pay {amount, number, money} {currency}. Ref {ref}. We will tell you when the money arrives.',
    'request.createdWithCode':
      'Asked {phone} to pay {amount, number, money} {currency}. They can pay with code {mfscode}. Ref {ref}. We will tell you when it arrives.',
    'request.submittedBefore':
      'We are checking whether your request went through.{hasRef, select, yes { Ref {ref}.} other {}} You will be told the result.',
    'request.unconfirmed':
      'We could not confirm the request was sent.{hasRef, select, yes { Ref {ref}.} other {}} Do not send it again; you will be notified if money arrives.',
    'request.refused':
      'The service refused the request ({fields}). Nothing was sent. Please check the details and start again.',
    'request.cancelled': 'Request cancelled. Nothing was sent.',
    'request.noCurrency': 'No currency of your country can be requested here yet.',
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
    'request.summary': 'Omba {phone} alipe {amount, number, money} {currency} kwa "{reason}"?',
    'request.summaryWithInstructions':
      'Omba {phone} alipe {amount, number, money} {currency} kwa "{reason}", pamoja na maelekezo?',
    'request.confirm': 'Tuma ombi',
    'request.cancel': 'Ghairi',
    'request.created':
      'Tumemwomba {phone} alipe {amount, number, money} {currency}. Kumb {ref}. Tutakujulisha pesa ikifika.',
    'request.createdWithCode':
      'Tumemwomba {phone} alipe {amount, number, money} {currency}. Anaweza kulipa kwa msimbo {mfscode}. Kumb {ref}. Tutakujulisha ikifika.',
    'request.submittedBefore':
      'Tunakagua kama ombi lako limepita.{hasRef, select, yes { Kumb {ref}.} other {}} Utaarifiwa matokeo.',
    'request.unconfirmed':
      'Hatukuweza kuthibitisha kuwa ombi limetumwa.{hasRef, select, yes { Kumb {ref}.} other {}} Usilitume tena; utaarifiwa pesa ikifika.',
    'request.refused': 'Huduma imekataa ombi ({fields}). Hakuna kilichotumwa. Kagua taarifa uanze upya.',
    'request.cancelled': 'Ombi limeghairiwa. Hakuna kilichotumwa.',
    'request.noCurrency': 'Hakuna sarafu ya nchi yako inayoweza kuombwa hapa bado.',
  },
  fr: {
    ...inputMessages.fr,
    ...failureMessages.fr,
    'request.askPhone': 'Entrez le numéro de la personne qui doit vous payer :',
    'request.askAmount': 'Entrez le montant à demander :',
    'request.chooseCurrency': 'Choisissez la devise :',
    'request.askReason': "Entrez un motif court qu'elle verra (les réseaux peuvent couper après 19 caractères) :",
    'request.reasonLong': 'Les réseaux peuvent n\'afficher que les {max} premiers caractères : "{shown}".',
    'request.askInstructions': 'Lui envoyer les instructions pour payer ?',
    'request.summary': 'Demander à {phone} de payer {amount, number, money} {currency} pour "{reason}" ?',
    'request.summaryWithInstructions':
      'Demander à {phone} de payer {amount, number, money} {currency} pour "{reason}", avec les instructions ?',
    'request.confirm': 'Envoyer la demande',
    'request.cancel': 'Annuler',
    'request.created':
      "Demande envoyée à {phone} : {amount, number, money} {currency}. Réf {ref}. Nous vous dirons quand l'argent arrivera.",
    'request.createdWithCode':
      "Demande envoyée à {phone} : {amount, number, money} {currency}. Code de paiement {mfscode}. Réf {ref}. Nous vous dirons quand l'argent arrivera.",
    'request.submittedBefore':
      'Nous vérifions si votre demande est passée.{hasRef, select, yes { Réf {ref}.} other {}} Vous serez informé du résultat.',
    'request.unconfirmed':
      "Nous n'avons pas pu confirmer l'envoi de la demande.{hasRef, select, yes { Réf {ref}.} other {}} Ne la renvoyez pas ; vous serez informé si l'argent arrive.",
    'request.refused':
      "Le service a refusé la demande ({fields}). Rien n'a été envoyé. Vérifiez les informations et recommencez.",
    'request.cancelled': "Demande annulée. Rien n'a été envoyé.",
    'request.noCurrency': 'Aucune monnaie de votre pays ne peut encore être demandée ici.',
  },
};
