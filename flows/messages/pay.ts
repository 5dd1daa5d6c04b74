/**
 * Words of the pay flow (keys `pay.*`), English, Kiswahili and French, with the input and failure reasons it can
 * show. Each screen, with its numbered choices, fits a 182-character USSD screen.
 */
import { failureMessages } from '../failure.js';
import { inputMessages } from '../input.js';
import type { Lang, Messages } from '../types.js';

/** The pay flow's catalogue, by language. */
export const payMessages: Record<Lang, Messages> = {
  en: {
    ...inputMessages.en,
    ...failureMessages.en,
    'pay.chooseWho': 'Pay whom?',
    'pay.recent.money': '{name}',
    'pay.recent.airtime': 'Airtime: {name}',
    'pay.recent.bank': 'Bank: {name}',
    'pay.kind.new.money': 'Someone new',
    'pay.kind.new.airtime': 'Airtime, new number',
    'pay.kind.new.bank': 'Bank transfer',
    'pay.addNote': 'Add a note',
    'pay.chooseKind': 'What do you want to send?',
    'pay.kind.money': 'Mobile money',
    'pay.kind.airtime': 'Airtime',
    'pay.kind.bank': 'Bank transfer',
    'pay.chooseBank': 'Choose the bank:',
    'pay.noBanks': 'No bank of your country can be paid here yet.',
    'pay.noCurrency': 'No currency of your country can be paid here yet.',
    'pay.askAccountNumber': 'Enter the bank account number:',
    'pay.askAccountName': 'Enter the name on the bank account:',
    'pay.askEmail': 'Enter an email address for the bank receipt:',
    'pay.emailInvalid': 'That is not an email address, e.g. name@example.com.',
    'pay.askEmailOrSkip': 'Enter an email address for the bank receipt, or skip it:',
    'pay.skipEmail': 'Skip',
    'pay.askPhone': 'Enter the phone number of the person to pay:',
    'pay.askFirstName': 'This number is new to us. Enter the first name of its owner:',
    'pay.askLastName': 'Enter the last name:',
    'pay.askAmount': 'Enter the amount:',
    'pay.askAmountIn': 'Enter the amount in {currency}:',
    'pay.otherCurrency': 'Another currency',
    'pay.chooseCurrency': 'Choose the currency:',
    'pay.askDescription': 'Enter a note for the recipient (at most 140 characters):',
    'pay.notRegistered': '{phone} is not registered for mobile money, so it cannot be paid.',
    'pay.otherNumber': 'Enter another number',
    'pay.stop': 'Stop',
    'pay.confirmName': 'The network knows this number as {networkName}, not {name}.',
    'pay.payNetworkName': 'Pay {networkName}',
    'pay.askFirstNameOrNetwork':
      'The network knows {phone} as {networkName}. Pay that name, or enter the first name of its owner:',
    'pay.payTypedName': 'Pay {name} anyway',
    'pay.abroad':
      'This number is abroad ({country, select, UG {Uganda} KE {Kenya} TZ {Tanzania} RW {Rwanda} BI {Burundi} CD {DR Congo} NG {Nigeria} GH {Ghana} ZM {Zambia} other {{country}}}).',
    'pay.summary.money':
      'Send {amount, number, money} {currency} of mobile money to {name} ({phone})?{hasNote, select, yes { Note: {note}} other {}}',
    'pay.summary.airtime':
      'Send {amount, number, money} {currency} of airtime to {name} ({phone})?{hasNote, select, yes { Note: {note}} other {}}',
    'pay.summary.bank':
      'Send {amount, number, money} {currency} to {name}, account {account} at {bank}?{hasNote, select, yes { Note: {note}} other {}}',
    'pay.confirm': 'Confirm',
    'pay.cancel': 'Cancel',
    'pay.repeat':
      'You paid {amount, number, money} {currency} to {phone} {minutes, plural, =0 {just now} one {# minute ago} other {# minutes ago}}. Send a second payment?',
    'pay.repeatOpen':
      'Your payment of {amount, number, money} {currency} to {phone} is {stage, select, held {awaiting approval} other {still on its way}}.{hasRef, select, yes { Ref {ref}.} other {}} Send a second one?',
    'pay.payAgain': 'Yes, send again',
    'pay.askPin': 'Enter your PIN to confirm:',
    'pay.pinWrong': 'Wrong PIN. Try again.',
    'pay.pinWrongLeft': 'Wrong PIN. {left, plural, one {# attempt left.} other {# attempts left.}}',
    'pay.submitted': 'Sent: {amount, number, money} {currency} to {name}. Ref {ref}. We will tell you when it arrives.',
    'pay.submittedBefore':
      'We are checking whether your payment went through.{hasRef, select, yes { Ref {ref}.} other {}} You will be told the result. Do not send it again.',
    'pay.held':
      'Your payment of {amount, number, money} {currency} needs approval: it was sent to the approvers, not to the recipient. You will be told their decision.{hasRef, select, yes { Ref {ref}.} other {}}',
    'pay.unconfirmed':
      'We could not confirm the payment: it may or may not have been made.{hasRef, select, yes { Ref {ref}.} other {}} Do not pay again; you will be notified of the result.',
    'pay.refused':
      'The service refused the payment ({fields}). Nothing was sent. Please check the details and start again.',
    'pay.cancelled': 'Payment cancelled. Nothing was sent.',
  },
  sw: {
    ...inputMessages.sw,
    ...failureMessages.sw,
    'pay.chooseWho': 'Umlipe nani?',
    'pay.recent.money': '{name}',
    'pay.recent.airtime': 'Muda wa maongezi: {name}',
    'pay.recent.bank': 'Benki: {name}',
    'pay.kind.new.money': 'Mtu mpya',
    'pay.kind.new.airtime': 'Muda wa maongezi, namba mpya',
    'pay.kind.new.bank': 'Uhamisho wa benki',
    'pay.addNote': 'Ongeza ujumbe',
    'pay.chooseKind': 'Unataka kutuma nini?',
    'pay.kind.money': 'Pesa ya simu',
    'pay.kind.airtime': 'Muda wa maongezi',
    'pay.kind.bank': 'Uhamisho wa benki',
    'pay.chooseBank': 'Chagua benki:',
    'pay.noBanks': 'Hakuna benki ya nchi yako inayoweza kulipwa hapa bado.',
    'pay.noCurrency': 'Hakuna sarafu ya nchi yako inayoweza kulipwa hapa bado.',
    'pay.askAccountNumber': 'Weka namba ya akaunti ya benki:',
    'pay.askAccountName': 'Weka jina la akaunti ya benki:',
    'pay.askEmail': 'Weka barua pepe ya kupokea risiti ya benki:',
    'pay.emailInvalid': 'Hiyo si barua pepe, mfano jina@mfano.com.',
    'pay.askEmailOrSkip': 'Weka barua pepe ya kupokea risiti ya benki, au ruka:',
    'pay.skipEmail': 'Ruka',
    'pay.askPhone': 'Weka namba ya simu ya mtu wa kulipwa:',
    'pay.askFirstName': 'Namba hii ni mpya kwetu. Weka jina la kwanza la mwenye namba:',
    'pay.askLastName': 'Weka jina la mwisho:',
    'pay.askAmount': 'Weka kiasi:',
    'pay.askAmountIn': 'Weka kiasi kwa {currency}:',
    'pay.otherCurrency': 'Sarafu nyingine',
    'pay.chooseCurrency': 'Chagua sarafu:',
    'pay.askDescription': 'Weka ujumbe kwa mpokeaji (herufi 140 au chini):',
    'pay.notRegistered': '{phone} haijasajiliwa kwa pesa ya simu, kwa hiyo haiwezi kulipwa.',
    'pay.otherNumber': 'Weka namba nyingine',
    'pay.stop': 'Acha',
    'pay.confirmName': 'Mtandao unaijua namba hii kama {networkName}, si {name}.',
    'pay.payNetworkName': 'Mlipe {networkName}',
    'pay.askFirstNameOrNetwork':
      'Mtandao unaijua {phone} kama {networkName}. Mlipe jina hilo, au weka jina la kwanza la mwenye namba:',
    'pay.payTypedName': 'Mlipe {name} hata hivyo',
    'pay.abroad':
      'Nje ya nchi: {country, select, UG {Uganda} KE {Kenya} TZ {Tanzania} RW {Rwanda} BI {Burundi} CD {Kongo DRC} NG {Nigeria} GH {Ghana} ZM {Zambia} other {{country}}}.',
    'pay.summary.money':
      'Tuma {amount, number, money} {currency} ya pesa ya simu kwa {name} ({phone})?{hasNote, select, yes { Ujumbe: {note}} other {}}',
    'pay.summary.airtime':
      'Tuma {amount, number, money} {currency} ya muda wa maongezi kwa {name} ({phone})?{hasNote, select, yes { Ujumbe: {note}} other {}}',
    'pay.summary.bank':
      'Tuma {amount, number, money} {currency} kwa {name}, akaunti {account} ya {bank}?{hasNote, select, yes { Ujumbe: {note}} other {}}',
    'pay.confirm': 'Thibitisha',
    'pay.cancel': 'Ghairi',
    'pay.repeat':
      'Ulilipa {amount, number, money} {currency} kwa {phone} {minutes, plural, =0 {sasa hivi} one {dakika # iliyopita} other {dakika # zilizopita}}. Tuma malipo ya pili?',
    'pay.repeatOpen':
      'Malipo ya {amount, number, money} {currency} kwa {phone} {stage, select, held {yanasubiri idhini} other {bado yako njiani}}.{hasRef, select, yes { Kumb {ref}.} other {}} Tuma malipo ya pili?',
    'pay.payAgain': 'Ndiyo, tuma tena',
    'pay.askPin': 'Weka PIN yako kuthibitisha:',
    'pay.pinWrong': 'PIN si sahihi. Jaribu tena.',
    'pay.pinWrongLeft': 'PIN si sahihi. {left, plural, one {Limebaki jaribio #.} other {Yamebaki majaribio #.}}',
    'pay.submitted': 'Imetumwa: {amount, number, money} {currency} kwa {name}. Kumb {ref}. Tutakujulisha yakifika.',
    'pay.submittedBefore':
      'Tunakagua kama malipo yako yamepita.{hasRef, select, yes { Kumb {ref}.} other {}} Utaarifiwa matokeo. Usiyatume tena.',
    'pay.held':
      'Malipo yako ya {amount, number, money} {currency} yanahitaji idhini: yametumwa kwa waidhinishaji, si kwa mpokeaji. Utaambiwa uamuzi wao.{hasRef, select, yes { Kumb {ref}.} other {}}',
    'pay.unconfirmed':
      'Hatukuweza kuthibitisha malipo: huenda yamefanyika au la.{hasRef, select, yes { Kumb {ref}.} other {}} Usilipe tena; utaarifiwa matokeo.',
    'pay.refused': 'Huduma imekataa malipo ({fields}). Hakuna kilichotumwa. Kagua taarifa uanze upya.',
    'pay.cancelled': 'Malipo yameghairiwa. Hakuna kilichotumwa.',
  },
  fr: {
    ...inputMessages.fr,
    ...failureMessages.fr,
    'pay.chooseWho': 'Payer qui ?',
    'pay.recent.money': '{name}',
    'pay.recent.airtime': 'Crédit : {name}',
    'pay.recent.bank': 'Banque : {name}',
    'pay.kind.new.money': "Quelqu'un de nouveau",
    'pay.kind.new.airtime': 'Crédit, nouveau numéro',
    'pay.kind.new.bank': 'Virement bancaire',
    'pay.addNote': 'Ajouter un message',
    'pay.chooseKind': 'Que voulez-vous envoyer ?',
    'pay.kind.money': 'Argent mobile',
    'pay.kind.airtime': 'Crédit de communication',
    'pay.kind.bank': 'Virement bancaire',
    'pay.chooseBank': 'Choisissez la banque :',
    'pay.noBanks': 'Aucune banque de votre pays ne peut encore être payée ici.',
    'pay.noCurrency': 'Aucune monnaie de votre pays ne peut encore être payée ici.',
    'pay.askAccountNumber': 'Entrez le numéro du compte bancaire :',
    'pay.askAccountName': 'Entrez le nom du titulaire du compte :',
    'pay.askEmail': 'Entrez une adresse e-mail pour le reçu de la banque :',
    'pay.emailInvalid': "Ce n'est pas une adresse e-mail, par ex. nom@exemple.com.",
    'pay.askEmailOrSkip': 'Entrez une adresse e-mail pour le reçu de la banque, ou passez :',
    'pay.skipEmail': 'Passer',
    'pay.askPhone': 'Entrez le numéro de téléphone de la personne à payer :',
    'pay.askFirstName': 'Ce numéro est nouveau pour nous. Entrez le prénom de son titulaire :',
    'pay.askLastName': 'Entrez le nom de famille :',
    'pay.askAmount': 'Entrez le montant :',
    'pay.askAmountIn': 'Entrez le montant en {currency} :',
    'pay.otherCurrency': 'Une autre devise',
    'pay.chooseCurrency': 'Choisissez la devise :',
    'pay.askDescription': 'Entrez un message pour le bénéficiaire (140 caractères au plus) :',
    'pay.notRegistered': "{phone} n'est pas inscrit à l'argent mobile : il ne peut pas être payé.",
    'pay.otherNumber': 'Entrer un autre numéro',
    'pay.stop': 'Arrêter',
    'pay.confirmName': 'Le réseau connaît ce numéro sous le nom {networkName}, pas {name}.',
    'pay.payNetworkName': 'Payer {networkName}',
    'pay.askFirstNameOrNetwork':
      'Le réseau connaît le {phone} au nom de {networkName}. Payez ce nom, ou entrez le prénom du titulaire :',
    'pay.payTypedName': 'Payer {name} quand même',
    'pay.repeat':
      "Vous avez payé {amount, number, money} {currency} à {phone} {minutes, plural, =0 {à l'instant} one {il y a # minute} other {il y a # minutes}}. Envoyer un second paiement ?",
    'pay.repeatOpen':
      "Un paiement de {amount, number, money} {currency} à {phone} {stage, select, held {attend l'approbation} other {est encore en cours}}.{hasRef, select, yes { Réf {ref}.} other {}} En envoyer un second ?",
    'pay.payAgain': 'Oui, renvoyer',
    'pay.abroad':
      'Étranger : {country, select, UG {Ouganda} KE {Kenya} TZ {Tanzanie} RW {Rwanda} BI {Burundi} CD {RD Congo} NG {Nigeria} GH {Ghana} ZM {Zambie} other {{country}}}.',
    'pay.summary.money':
      "Envoyer {amount, number, money} {currency} d'argent mobile à {name} ({phone}) ?{hasNote, select, yes { Message : {note}} other {}}",
    'pay.summary.airtime':
      'Envoyer {amount, number, money} {currency} de crédit à {name} ({phone}) ?{hasNote, select, yes { Message : {note}} other {}}',
    'pay.summary.bank':
      'Envoyer {amount, number, money} {currency} à {name}, compte {account} chez {bank} ?{hasNote, select, yes { Message : {note}} other {}}',
    'pay.confirm': 'Confirmer',
    'pay.cancel': 'Annuler',
    'pay.askPin': 'Entrez votre PIN pour confirmer :',
    'pay.pinWrong': 'PIN incorrect. Réessayez.',
    'pay.pinWrongLeft': 'PIN incorrect. {left, plural, one {Il reste # essai.} other {Il reste # essais.}}',
    'pay.submitted':
      'Envoyé : {amount, number, money} {currency} à {name}. Réf {ref}. Nous vous dirons quand il sera arrivé.',
    'pay.submittedBefore':
      'Nous vérifions si votre paiement est passé.{hasRef, select, yes { Réf {ref}.} other {}} Vous serez informé du résultat. Ne le renvoyez pas.',
    'pay.held':
      'Votre paiement de {amount, number, money} {currency} doit être approuvé : il a été envoyé aux approbateurs, pas au bénéficiaire. Vous connaîtrez leur décision.{hasRef, select, yes { Réf {ref}.} other {}}',
    'pay.unconfirmed':
      "Nous n'avons pas pu confirmer le paiement : il a peut-être été fait.{hasRef, select, yes { Réf {ref}.} other {}} Ne payez pas à nouveau ; vous serez informé du résultat.",
    'pay.refused':
      "Le service a refusé le paiement ({fields}). Rien n'a été envoyé. Vérifiez les informations et recommencez.",
    'pay.cancelled': "Paiement annulé. Rien n'a été envoyé.",
  },
};
