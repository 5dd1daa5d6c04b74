/**
 * Settings read as an operator writes them: the WhatsApp settings (all four turn it on, none leaves it off, some
 * refuse the start naming the rest), REDIS_URL's address, RETENTION_DAYS's bounds, the leases' bounds, a policy
 * that is not one.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, whatsappOn } from '../src/config.js';
import { checkStart } from '../src/start-checks.js';

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

describe('REDIS_URL', () => {
  const refusal = (url: string) => {
    try {
      loadConfig({ REDIS_URL: url });
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as Error).message;
    }
    return undefined;
  };

  it.each([
    ['redis://:6379', /not a URL with a host/],
    ['redis:///0', /no host/],
    ['redis://127.0.0.1:0', /port 0/],
    ['redis://127.0.0.1:99999', /port of 1 to 65535/],
    ['redis://127.0.0.1:6379/abc', /the path is the database number/],
    ['redis://127.0.0.1:6379/0/1', /the path is the database number/],
    ['127.0.0.1:6379', /a redis:\/\/ or rediss:\/\/ URL/],
  ])('refuses %s in one line naming it', (url, reason) => {
    const message = refusal(url);
    expect(message).toMatch(/^REDIS_URL: /);
    expect(message).toMatch(reason);
    expect(message).not.toContain('\n');
  });

  it.each(['redis://127.0.0.1:6379', 'redis://h/', 'redis://h:6380/14', 'rediss://:p%40ss@[::1]:6380/1'])(
    'takes %s',
    (url) => {
      expect(refusal(url)).toBeUndefined();
      expect(loadConfig({ REDIS_URL: url }).redis).toEqual({ mode: 'server', url });
    },
  );
});

describe('REDIS_KEY_PREFIX', () => {
  const refusal = (prefix: string) => {
    try {
      loadConfig({ REDIS_KEY_PREFIX: prefix });
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as Error).message;
    }
    return undefined;
  };

  it('is momo: unless set', () => {
    expect(loadConfig({}).REDIS_KEY_PREFIX).toBe('momo:');
  });

  it.each([
    ['', /empty/],
    ['   ', /no spaces/],
    ['my app:', /no spaces/],
    ['{momo}:', /braces would take the keys' hash tags away/],
    ['momo{1}:', /braces/],
    ['momo', /then a colon/],
    ['momo:*', /then a colon/],
    [`${'a'.repeat(64)}:`, /at most 63/],
  ])('refuses %j in one line naming it and why', (prefix, reason) => {
    const message = refusal(prefix);
    expect(message).toMatch(/REDIS_KEY_PREFIX: /);
    expect(message).toMatch(reason);
    expect(message).not.toContain('\n');
  });

  it.each(['momo:', 'staging-2:', 'test:kill:1b4e28ba-2fa1-11d2-883f-0016d3cca427:', 'a.b_c:'])(
    'takes %s',
    (prefix) => {
      expect(refusal(prefix)).toBeUndefined();
      expect(loadConfig({ REDIS_KEY_PREFIX: prefix }).REDIS_KEY_PREFIX).toBe(prefix);
    },
  );
});

describe('REDIS_SENTINELS and REDIS_CLUSTER_NODES', () => {
  it('take host names as a container network gives them (redis_sentinel_1), as REDIS_URL does', () => {
    expect(
      loadConfig({ REDIS_SENTINELS: 'redis_sentinel_1:26379,sentinel-2:26379', REDIS_SENTINEL_NAME: 'momo' }).redis,
    ).toMatchObject({
      mode: 'sentinel',
      sentinels: [
        { host: 'redis_sentinel_1', port: 26379 },
        { host: 'sentinel-2', port: 26379 },
      ],
    });
    expect(loadConfig({ REDIS_CLUSTER_NODES: 'redis_node_1:7000' }).redis).toMatchObject({
      mode: 'cluster',
      nodes: [{ host: 'redis_node_1', port: 7000 }],
    });
    expect(loadConfig({ REDIS_URL: 'redis://redis_1:6379/0' }).redis).toEqual({
      mode: 'server',
      url: 'redis://redis_1:6379/0',
    });
    expect(() => loadConfig({ REDIS_CLUSTER_NODES: 'redis node:7000' })).toThrow(/REDIS_CLUSTER_NODES/);
  });
});

describe('RETENTION_DAYS', () => {
  it('is seven years unless set, and a whole number of days from 1 to a century', () => {
    expect(loadConfig({}).RETENTION_DAYS).toBe(2555);
    expect(loadConfig({ RETENTION_DAYS: '36500' }).RETENTION_DAYS).toBe(36_500);
    for (const days of ['0', '-5', '1.5', 'abc', '36501', '99999999999']) {
      expect(() => loadConfig({ RETENTION_DAYS: days }), days).toThrow(/RETENTION_DAYS/);
    }
  });
});

describe('RETENTION_DAYS in production', () => {
  const production = {
    MOMO_BASE_URL: 'https://momo.example',
    MOMO_API_KEY: 'key',
    ACCESS_POLICY: JSON.stringify({ roles: {}, users: {} }),
    DATABASE_URL: 'postgres://momo@db/momo',
  };
  it('refuses under 365 days in one line, and takes 365', () => {
    for (const days of ['1', '364']) {
      expect(() => checkStart(loadConfig({ ...production, RETENTION_DAYS: days })), days).toThrow(
        new RegExp(`^RETENTION_DAYS: ${days} days is under the 365 a production journal keeps[^\n]*$`),
      );
    }
    expect(() => checkStart(loadConfig({ ...production, RETENTION_DAYS: '365' }))).not.toThrow();
    expect(() => checkStart(loadConfig({ RETENTION_DAYS: '1' }))).not.toThrow();
  });
});

describe('DATABASE_OWNER_URL', () => {
  it('needs DATABASE_URL', () => {
    expect(() => loadConfig({ DATABASE_OWNER_URL: 'postgres://owner@db/momo' })).toThrow(
      /^DATABASE_OWNER_URL: set without DATABASE_URL/,
    );
    expect(
      loadConfig({ DATABASE_OWNER_URL: 'postgres://owner@db/momo', DATABASE_URL: 'postgres://momo@db/momo' })
        .DATABASE_OWNER_URL,
    ).toBe('postgres://owner@db/momo');
  });
});

describe('an access policy that is not one', () => {
  it('refuses the start in one line: the setting, then each problem, after one colon', () => {
    const config = loadConfig({ ACCESS_POLICY: JSON.stringify({ roles: { payer: { flows: ['pay'] } }, users: {} }) });
    expect(() => checkStart(config)).toThrow(ConfigError);
    expect(() => checkStart(config)).toThrow(
      /^ACCESS_POLICY: Invalid access policy: roles\.payer\.perPaymentLimit: [^;]+; roles\.payer\.dailyLimit: [^;\n]+$/,
    );
  });
});

describe("the caller's country settings", () => {
  it('read per country and per channel, and refuse what they cannot read', () => {
    const cfg = loadConfig({});
    expect(cfg.COUNTRY_CURRENCIES).toEqual({ UG: ['UGX'], KE: ['KES'] });
    expect(cfg.CHANNEL_COUNTRIES).toEqual({});
    expect(cfg.TEST_CURRENCIES).toEqual(['BXC']);
    expect(cfg.TEST_NUMBERS).toBeUndefined();
    const set = loadConfig({
      COUNTRY_CURRENCIES: 'ug:UGX, UG:usd ,KE:KES,NG:NGN',
      CHANNEL_COUNTRIES: 'telegram:UG,Slack:ke',
      TEST_NUMBERS: '+256772000001, +254712000001',
    });
    expect(set.COUNTRY_CURRENCIES).toEqual({ UG: ['UGX', 'USD'], KE: ['KES'], NG: ['NGN'] });
    expect(set.CHANNEL_COUNTRIES).toEqual({ telegram: ['UG'], slack: ['KE'] });
    expect(set.TEST_NUMBERS).toEqual(['+256772000001', '+254712000001']);
    expect(() => loadConfig({ COUNTRY_CURRENCIES: 'Uganda:UGX' })).toThrow(/COUNTRY_CURRENCIES.*Uganda:UGX/);
    expect(() => loadConfig({ COUNTRY_CURRENCIES: 'UG=UGX' })).toThrow(/COUNTRY_CURRENCIES/);
    expect(() => loadConfig({ CHANNEL_COUNTRIES: 'sms:UG' })).toThrow(/CHANNEL_COUNTRIES.*sms:UG/);
    expect(() => loadConfig({ CHANNEL_COUNTRIES: 'telegram:UGA' })).toThrow(/CHANNEL_COUNTRIES/);
    expect(() => loadConfig({ CHANNEL_COUNTRIES: 'telegram:UG,telegram:KE' })).toThrow(/telegram twice/);
  });
});

describe('the leases of a process that died', () => {
  it('are the production ones unless set, and read as set', () => {
    expect(loadConfig({})).toMatchObject({ RUN_LEASE_MS: 10_000, NOTIFY_LEASE_MS: 30_000, NOTIFY_JOB_LOCK_MS: 15_000 });
    expect(loadConfig({ RUN_LEASE_MS: '3000', NOTIFY_LEASE_MS: '6000', NOTIFY_JOB_LOCK_MS: '3000' })).toMatchObject({
      RUN_LEASE_MS: 3000,
      NOTIFY_LEASE_MS: 6000,
      NOTIFY_JOB_LOCK_MS: 3000,
    });
  });

  it.each(['RUN_LEASE_MS', 'NOTIFY_LEASE_MS', 'NOTIFY_JOB_LOCK_MS'])(
    '%s refuses less than 300 ms, naming itself',
    (name) => {
      expect(() => loadConfig({ [name]: '100' })).toThrow(new RegExp(`${name}: `));
    },
  );
});
