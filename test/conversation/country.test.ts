import { describe, expect, it } from 'vitest';
import { callerCountry, currenciesOfCountry, type CountrySettings } from '../../src/conversation/engine/country.js';

const settings: CountrySettings = {
  defaultCountry: 'UG',
  channelCountries: { telegram: 'KE' },
  currencies: ['UGX', 'KES', 'BXC'],
  countryCurrencies: { UG: ['UGX'], KE: ['KES'], NG: ['NGN'] },
  testCurrencies: ['BXC'],
};

describe("the caller's country", () => {
  it("is their number's, else their channel's, else the default", () => {
    expect(callerCountry('+254712345680', 'ussd', settings)).toBe('KE');
    expect(callerCountry('+2348031400001', 'whatsapp', settings)).toBe('NG');
    expect(callerCountry(undefined, 'telegram', settings)).toBe('KE');
    expect(callerCountry(undefined, 'slack', settings)).toBe('UG');
    expect(callerCountry('not a number', 'slack', { ...settings, defaultCountry: 'tz' })).toBe('TZ');
  });

  it("offers the country's currencies the organization allows; the test ones apart; none: none", () => {
    expect(currenciesOfCountry('UG', settings)).toEqual({ currencies: ['UGX'], testCurrencies: ['BXC'] });
    expect(currenciesOfCountry('KE', settings)).toEqual({ currencies: ['KES'], testCurrencies: ['BXC'] });
    // NGN is not allowed (not in CURRENCIES), nor is any currency named for Tanzania: never another country's.
    expect(currenciesOfCountry('NG', settings)).toEqual({ currencies: [], testCurrencies: [] });
    expect(currenciesOfCountry('TZ', settings)).toEqual({ currencies: [], testCurrencies: [] });
    expect(currenciesOfCountry('UG', { ...settings, countryCurrencies: { UG: ['KES', 'UGX'] } }).currencies).toEqual([
      'KES',
      'UGX',
    ]);
    // Only the test currency allowed: it is offered as any other.
    expect(currenciesOfCountry('UG', { ...settings, currencies: ['BXC'] })).toEqual({
      currencies: ['BXC'],
      testCurrencies: [],
    });
    // Without COUNTRY_CURRENCIES (a product built without it): every currency to everyone.
    const { countryCurrencies: _, ...all } = settings;
    expect(currenciesOfCountry('KE', all)).toEqual({ currencies: ['UGX', 'KES', 'BXC'], testCurrencies: [] });
  });
});
