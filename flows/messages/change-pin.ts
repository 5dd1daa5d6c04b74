/**
 * Words of Change PIN (keys `changePin.*`), English, Kiswahili and French, with the failure reasons it can
 * show. A weak PIN's reason is `changePin.weak.<reason>` (src/people/pin-rules.ts PinWeakness).
 */
import { failureMessages } from '../failure.js';
import type { Lang, Messages } from '../types.js';

export const changePinMessages: Record<Lang, Messages> = {
  en: {
    ...failureMessages.en,
    'changePin.askOld': 'Change PIN. Enter your current PIN:',
    'changePin.askCode': 'Your PIN was reset. Enter the one-time code we sent you:',
    'changePin.askNew': 'Choose a new PIN (4 to 6 digits):',
    'changePin.askRepeat': 'Enter the new PIN again:',
    'changePin.mismatch': 'The two PINs were not the same. Choose your new PIN again.',
    'changePin.weak.length': 'A PIN is 4 to 6 digits.',
    'changePin.weak.repeated': 'A PIN cannot be one digit repeated.',
    'changePin.weak.run': 'A PIN cannot be a run like 1234 or 9876.',
    'changePin.weak.ownNumber': 'A PIN cannot be the start or end of your phone number.',
    'changePin.weak.keypad': 'A PIN cannot be a line or a sequence like 2580, 1357 or 7890.',
    'changePin.weak.pair': 'A PIN cannot be a pair repeated like 1212.',
    'changePin.weak.current': 'The new PIN must differ from your current PIN.',
    'changePin.changed': 'Your PIN is changed. Use the new one from now on.',
    'changePin.set': 'Your new PIN is set. You can send money again.',
  },
  sw: {
    ...failureMessages.sw,
    'changePin.askOld': 'Badilisha PIN. Weka PIN yako ya sasa:',
    'changePin.askCode': 'PIN yako iliwekwa upya. Weka msimbo wa mara moja tuliokutumia:',
    'changePin.askNew': 'Chagua PIN mpya (tarakimu 4 hadi 6):',
    'changePin.askRepeat': 'Weka PIN mpya tena:',
    'changePin.mismatch': 'PIN mbili hazikufanana. Chagua PIN yako mpya tena.',
    'changePin.weak.length': 'PIN ni tarakimu 4 hadi 6.',
    'changePin.weak.repeated': 'PIN haiwezi kuwa tarakimu moja inayojirudia.',
    'changePin.weak.run': 'PIN haiwezi kuwa mfuatano kama 1234 au 9876.',
    'changePin.weak.ownNumber': 'PIN haiwezi kuwa mwanzo au mwisho wa namba yako ya simu.',
    'changePin.weak.keypad': 'PIN haiwezi kuwa mstari au mfuatano kama 2580, 1357 au 7890.',
    'changePin.weak.pair': 'PIN haiwezi kuwa jozi inayojirudia kama 1212.',
    'changePin.weak.current': 'PIN mpya lazima iwe tofauti na PIN yako ya sasa.',
    'changePin.changed': 'PIN yako imebadilishwa. Tumia mpya kuanzia sasa.',
    'changePin.set': 'PIN yako mpya imewekwa. Unaweza kutuma pesa tena.',
  },
  fr: {
    ...failureMessages.fr,
    'changePin.askOld': 'Changer le PIN. Entrez votre PIN actuel :',
    'changePin.askCode': 'Votre PIN a été réinitialisé. Entrez le code à usage unique que nous vous avons envoyé :',
    'changePin.askNew': 'Choisissez un nouveau PIN (4 à 6 chiffres) :',
    'changePin.askRepeat': 'Entrez le nouveau PIN encore une fois :',
    'changePin.mismatch': 'Les deux PIN ne sont pas les mêmes. Choisissez à nouveau votre PIN.',
    'changePin.weak.length': 'Un PIN a 4 à 6 chiffres.',
    'changePin.weak.repeated': 'Un PIN ne peut pas être un seul chiffre répété.',
    'changePin.weak.run': 'Un PIN ne peut pas être une suite comme 1234 ou 9876.',
    'changePin.weak.ownNumber': 'Un PIN ne peut pas être le début ou la fin de votre numéro.',
    'changePin.weak.keypad': 'Un PIN ne peut pas être une ligne ou une suite comme 2580, 1357 ou 7890.',
    'changePin.weak.pair': 'Un PIN ne peut pas être une paire répétée comme 1212.',
    'changePin.weak.current': 'Le nouveau PIN doit être différent du PIN actuel.',
    'changePin.changed': 'Votre PIN est changé. Utilisez le nouveau désormais.',
    'changePin.set': "Votre nouveau PIN est en place. Vous pouvez de nouveau envoyer de l'argent.",
  },
};
