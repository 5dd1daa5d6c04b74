/** The WhatsApp settings: all four turn it on, none leaves it off, some refuse the start naming the rest. */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, whatsappOn } from '../src/config.js';

const all = {
  WHATSAPP_TOKEN: 'EAAG-token',
  WHATSAPP_PHONE_NUMBER_ID: '106540352242922',
  WHATSAPP_APP_SECRET: 'secret',
  WHATSAPP_VERIFY_TOKEN: 'verify',
};

describe('WhatsApp settings', () => {
  it('are on with all four and off with none', () => {
    expect(whatsappOn(loadConfig(all))).toBe(true);
    expect(whatsappOn(loadConfig({}))).toBe(false);
    expect(whatsappOn(loadConfig({ WHATSAPP_TOKEN: '  ' }))).toBe(false);
  });

  it('refuse a start with some of them, in one line naming what is missing', () => {
    const { WHATSAPP_APP_SECRET: _secret, WHATSAPP_VERIFY_TOKEN: _verify, ...half } = all;
    expect(() => loadConfig(half)).toThrow(ConfigError);
    expect(() => loadConfig(half)).toThrow(
      /^WhatsApp is half configured: set WHATSAPP_APP_SECRET, WHATSAPP_VERIFY_TOKEN too \(or unset every WHATSAPP_ setting to turn it off\)$/,
    );
    expect(() => loadConfig({ WHATSAPP_VERIFY_TOKEN: 'v' })).toThrow(
      /set WHATSAPP_TOKEN, WHATSAPP_PHONE_NUMBER_ID, WHATSAPP_APP_SECRET too/,
    );
  });

  it('check the phone number id, the API URL and the template', () => {
    expect(() => loadConfig({ ...all, WHATSAPP_PHONE_NUMBER_ID: '123/../../me' })).toThrow(
      /WHATSAPP_PHONE_NUMBER_ID: the phone number id is digits/,
    );
    expect(() => loadConfig({ ...all, WHATSAPP_API_URL: 'graph.facebook.com' })).toThrow(/WHATSAPP_API_URL/);
    expect(() => loadConfig({ ...all, WHATSAPP_TEMPLATE_OUTCOME: 'Payment Update:en' })).toThrow(
      /WHATSAPP_TEMPLATE_OUTCOME/,
    );
    expect(loadConfig({ ...all, WHATSAPP_TEMPLATE_OUTCOME: 'payment_update:en_US' }).WHATSAPP_TEMPLATE_OUTCOME).toEqual(
      { name: 'payment_update', language: 'en_US' },
    );
    expect(loadConfig({ ...all, WHATSAPP_TEMPLATE_OUTCOME: 'payment_update' }).WHATSAPP_TEMPLATE_OUTCOME).toEqual({
      name: 'payment_update',
      language: 'en',
    });
    expect(loadConfig(all).WHATSAPP_TEMPLATE_OUTCOME).toBeUndefined();
  });

  it('read receipts are off unless turned on', () => {
    expect(loadConfig(all).WHATSAPP_READ_RECEIPTS).toBe(false);
    expect(loadConfig({ ...all, WHATSAPP_READ_RECEIPTS: 'true' }).WHATSAPP_READ_RECEIPTS).toBe(true);
    expect(() => loadConfig({ ...all, WHATSAPP_READ_RECEIPTS: 'maybe' })).toThrow(/WHATSAPP_READ_RECEIPTS/);
  });
});
