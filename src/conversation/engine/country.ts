/**
 * The caller's country, and the currencies they are offered in it. Pure: the engine asks once per flow run,
 * when the flow starts (never on every hop).
 *
 * A caller's country is their number's (USSD, WhatsApp), else their channel's (CHANNEL_COUNTRIES: Telegram and
 * Slack users have no number), else DEFAULT_COUNTRY. Their local numbers are read in it, and the examples, the
 * banks and the currencies they are offered are its, so a Kenyan teller's `0712000001` is a Kenyan number paid in
 * KES, and a number of another country says so on the summary.
 */
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import type { Channel } from '../types.js';

export interface CountrySettings {
  /** DEFAULT_COUNTRY (ISO 3166 alpha-2). */
  defaultCountry: string;
  /** CHANNEL_COUNTRIES: the country of a channel whose callers have no number. */
  channelCountries?: Partial<Record<Channel, string>>;
  /** CURRENCIES: what the organization allows to be offered, in its order. */
  currencies: readonly string[];
  /**
   * COUNTRY_CURRENCIES: each country's currencies. Absent (engine tests, a product built without it): every
   * currency of `currencies` is offered to everyone, the test ones too.
   */
  countryCurrencies?: Readonly<Record<string, readonly string[]>>;
  /** TEST_CURRENCIES: offered only to pay one of the test numbers. */
  testCurrencies?: readonly string[];
}

/** Where a caller's country comes from when their number says none: CHANNEL_COUNTRIES, else DEFAULT_COUNTRY. */
export type CallerCountrySettings = Pick<CountrySettings, 'defaultCountry' | 'channelCountries'>;

/**
 * The country (ISO 3166 alpha-2, capitals) of a caller with this number (if any) on this channel (none: /ops's
 * operators). The one rule for every reader of a number typed without its country code: the conversation, Slack's
 * bulk payouts, /ops's search.
 */
export function callerCountry(
  phone: string | undefined,
  channel: Channel | undefined,
  settings: CallerCountrySettings,
): string {
  const own = phone ? parsePhoneNumberFromString(phone)?.country : undefined;
  const ofChannel = channel ? settings.channelCountries?.[channel] : undefined;
  return (own ?? ofChannel ?? settings.defaultCountry).toUpperCase();
}

/** What a caller of `country` may be offered: its currencies, and the test currencies (for test numbers only). */
export interface CountryCurrencies {
  /**
   * Empty for a country with none of CURRENCIES (Nigeria in the demo): its callers are offered none, and told so,
   * never another country's.
   */
  currencies: string[];
  /** Offered besides `currencies` when paying a test number. */
  testCurrencies: string[];
}

/** The currencies a caller of `country` is offered: those of COUNTRY_CURRENCIES that CURRENCIES allows. */
export function currenciesOfCountry(country: string, settings: CountrySettings): CountryCurrencies {
  const { currencies: allowed, countryCurrencies } = settings;
  if (!countryCurrencies) return { currencies: [...allowed], testCurrencies: [] };
  const tests = allowed.filter((c) => settings.testCurrencies?.includes(c));
  const own = (countryCurrencies[country] ?? []).filter((c) => allowed.includes(c) && !tests.includes(c));
  const live = allowed.filter((c) => !tests.includes(c));
  // A CURRENCIES of test currencies only (a test set-up) offers them as any other.
  if (live.length === 0) return { currencies: tests, testCurrencies: [] };
  // The test currencies go beside a live one only: a caller offered none is offered no test currency either.
  return { currencies: own, testCurrencies: own.length > 0 ? tests : [] };
}
