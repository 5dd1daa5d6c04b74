/**
 * The simulated network directory: what a mobile network knows of a phone number (network, whether it is
 * registered for mobile money, the name it holds). Deterministic by number: the TEST_NUMBERS table gives a
 * few numbers with special behaviour; every other valid number of a supported country is registered under
 * a name generated from its digits, so the same number always answers the same.
 */
import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js';

export type TestBehaviour =
  | 'registered'
  | 'unregistered'
  | 'name_differs'
  | 'payment_fails'
  | 'payment_queued'
  | 'payment_paused'
  | 'payment_parked'
  | 'payment_needs_admin'
  | 'payment_aborted'
  | 'collection_fails'
  | 'pays_requests';

export interface TestNumber {
  phonenumber: string;
  behaviour: TestBehaviour;
  /** Name the network holds ('' for a number not registered for mobile money). */
  nameOnNetwork: string;
  network: string;
  /** What the number does, as printed by `npm run sandbox`. */
  description: string;
}

/** last_error of a payment to a `payment_fails` number. */
export const NETWORK_FAILURE = 'The recipient network did not confirm the transfer; the payment was not sent.';

/** last_error of a recipient whose transfer the network aborted (`payment_aborted`). */
export const NETWORK_ABORTED = 'The recipient network aborted the transfer; the money stayed in the wallet.';

/** paused_reason of a payment to the `payment_paused` number. */
export const PAUSED_REASON = 'The recipient network is temporarily unavailable.';

/** last_error of a collection from, or a request to, the `collection_fails` number. */
export const PAYER_SHORT = "The subscriber's wallet does not hold enough money.";

/**
 * Seconds of sandbox time the directory's numbers make things wait: a recipient `queued`, `paused` or
 * `parked` before its transfer completes, and the `pays_requests` subscriber before confirming (`prompt`).
 */
export const WAIT_SECONDS = { queued: 30, paused: 300, parked: 3600, prompt: 5 };

/** The special test numbers. Exported through src/sandbox/index.ts for other tests and docs/sandbox.md. */
export const TEST_NUMBERS: readonly TestNumber[] = [
  {
    phonenumber: '+256772000001',
    behaviour: 'registered',
    nameOnNetwork: 'Sarah Nakato',
    network: 'MTN Uganda',
    description: 'Registered as "Sarah Nakato"; payments succeed.',
  },
  {
    phonenumber: '+256772000002',
    behaviour: 'unregistered',
    nameOnNetwork: '',
    network: 'MTN Uganda',
    description: 'Not registered for mobile money: verification says no, payments end processed_with_errors.',
  },
  {
    phonenumber: '+256752000003',
    behaviour: 'name_differs',
    nameOnNetwork: 'Otim Geoffrey Okwir',
    network: 'Airtel Uganda',
    description:
      'Registered as "Otim Geoffrey Okwir" (a payer would type "Jeff Okello"): the name check fails, and ' +
      'with "Name match affects payment" on, so does the payment.',
  },
  {
    phonenumber: '+256772000004',
    behaviour: 'payment_fails',
    nameOnNetwork: 'Brian Mugisha',
    network: 'MTN Uganda',
    description: 'Registered as "Brian Mugisha"; every payment fails at the network with last_error.',
  },
  {
    phonenumber: '+256772000005',
    behaviour: 'payment_queued',
    nameOnNetwork: 'Daniel Okello',
    network: 'MTN Uganda',
    description: `Registered as "Daniel Okello"; a payment waits \`queued\` at the network for ${WAIT_SECONDS.queued} s, then completes.`,
  },
  {
    phonenumber: '+256772000006',
    behaviour: 'payment_paused',
    nameOnNetwork: 'Irene Atim',
    network: 'MTN Uganda',
    description: `Registered as "Irene Atim"; a payment is \`paused\` (paused_reason set) for ${WAIT_SECONDS.paused / 60} min, then completes.`,
  },
  {
    phonenumber: '+256772000007',
    behaviour: 'payment_parked',
    nameOnNetwork: 'Robert Kato',
    network: 'MTN Uganda',
    description: `Registered as "Robert Kato"; a payment is \`parked\` (wallet at its limit) for ${WAIT_SECONDS.parked / 3600} h, then completes.`,
  },
  {
    phonenumber: '+256772000008',
    behaviour: 'payment_needs_admin',
    nameOnNetwork: 'Janet Nansubuga',
    network: 'MTN Uganda',
    description:
      'Registered as "Janet Nansubuga"; a payment waits `paused_for_admin_action` until POST /sandbox/payments/{id}/approve (or cancel).',
  },
  {
    phonenumber: '+256772000009',
    behaviour: 'payment_aborted',
    nameOnNetwork: 'Patrick Mugerwa',
    network: 'MTN Uganda',
    description:
      'Registered as "Patrick Mugerwa"; the network aborts every transfer: recipient `aborted`, payment processed_with_errors.',
  },
  {
    phonenumber: '+256772000010',
    behaviour: 'collection_fails',
    nameOnNetwork: 'Grace Akello',
    network: 'MTN Uganda',
    description:
      'Registered as "Grace Akello"; her wallet is short: money she sends arrives `failed`, and a request to her goes ' +
      'processing_started then `failed`.',
  },
  {
    phonenumber: '+256772000011',
    behaviour: 'pays_requests',
    nameOnNetwork: 'Moses Ssempala',
    network: 'MTN Uganda',
    description: `Registered as "Moses Ssempala"; he pays every request to him: processing_started after ${WAIT_SECONDS.prompt} s, then the collection arrives and it is \`successful\`.`,
  },
  {
    phonenumber: '+254712000001',
    behaviour: 'registered',
    nameOnNetwork: 'Mary Wanjiku Njeri',
    network: 'Safaricom',
    description: 'Registered as "Mary Wanjiku Njeri" (Kenya); payments succeed.',
  },
  {
    phonenumber: '+254712000002',
    behaviour: 'unregistered',
    nameOnNetwork: '',
    network: 'Safaricom',
    description: 'Not registered for mobile money (Kenya).',
  },
];

/** Networks of the supported countries (spec: two in Uganda, one each elsewhere) and their currency. */
const COUNTRIES: Partial<Record<CountryCode, { currency?: string; network: (national: string) => string }>> = {
  UG: { currency: 'UGX', network: (n) => (/^(70|74|75|20)/.test(n) ? 'Airtel Uganda' : 'MTN Uganda') },
  KE: { currency: 'KES', network: () => 'Safaricom' },
  TZ: { network: () => 'Vodacom Tanzania' },
  GH: { network: () => 'MTN Ghana' },
  CD: { network: () => 'Vodacom DRC' },
  RW: { network: () => 'MTN Rwanda' },
};

const FIRST_NAMES = ['Joseph', 'Grace', 'Peter', 'Esther', 'Samuel', 'Ruth', 'David', 'Agnes', 'Moses', 'Faith'];
const LAST_NAMES = [
  'Ssemwanga',
  'Achieng',
  'Mutua',
  'Namubiru',
  'Kamau',
  'Opio',
  'Atieno',
  'Byaruhanga',
  'Otieno',
  'Nabirye',
];

export interface Subscriber {
  phonenumber: string;
  supported: boolean;
  registered: boolean;
  network: string;
  nameOnNetwork: string;
  /** Currency of the country's wallets, when the sandbox has one (UGX, KES). */
  currency?: string;
  behaviour: TestBehaviour;
}

/** Parses a number in international format (`+` and country code); undefined when it is not valid. */
export function parseInternational(value: string): string | undefined {
  const trimmed = value.trim();
  if (!trimmed.startsWith('+')) return undefined;
  const parsed = parsePhoneNumberFromString(trimmed);
  return parsed?.isValid() ? parsed.number : undefined;
}

/** What the network directory knows of a valid international number. */
export function lookupSubscriber(phonenumber: string): Subscriber {
  const parsed = parsePhoneNumberFromString(phonenumber);
  const country = parsed?.country ? COUNTRIES[parsed.country] : undefined;
  const national = parsed?.nationalNumber ?? '';
  const known = TEST_NUMBERS.find((t) => t.phonenumber === phonenumber);
  if (known) {
    return {
      phonenumber,
      supported: true,
      registered: known.behaviour !== 'unregistered',
      network: known.network,
      nameOnNetwork: known.nameOnNetwork,
      currency: country?.currency,
      behaviour: known.behaviour,
    };
  }
  if (!country) {
    return {
      phonenumber,
      supported: false,
      registered: false,
      network: '',
      nameOnNetwork: '',
      behaviour: 'unregistered',
    };
  }
  const digits = [...national].reduce((sum, d, i) => sum + Number(d) * (i + 1), 0);
  return {
    phonenumber,
    supported: true,
    registered: true,
    network: country.network(national),
    nameOnNetwork: `${FIRST_NAMES[digits % FIRST_NAMES.length]} ${LAST_NAMES[Math.floor(digits / 10) % LAST_NAMES.length]}`,
    currency: country.currency,
    behaviour: 'registered',
  };
}

/** No conversion is done: UGX goes to Ugandan numbers, KES to Kenyan ones, the test currency BXC anywhere. */
export function currencySuits(currency: string, phonenumber: string): boolean {
  return currency === 'BXC' || lookupSubscriber(phonenumber).currency === currency;
}

/** A name check passes at this score or above (0 to 100). */
export const NAME_MATCH_THRESHOLD = 60;

/**
 * How well a supplied name matches the network's, 0 to 100: the share of name words both hold (Dice
 * coefficient over lower-cased words), so word order and a missing middle name matter little.
 */
export function nameMatchScore(supplied: string, onNetwork: string): number {
  const words = (s: string) =>
    new Set(
      s
        .toLowerCase()
        .split(/[^\p{L}]+/u)
        .filter(Boolean),
    );
  const a = words(supplied);
  const b = words(onNetwork);
  if (a.size === 0 || b.size === 0) return 0;
  const common = [...a].filter((w) => b.has(w)).length;
  return Math.round((200 * common) / (a.size + b.size));
}
