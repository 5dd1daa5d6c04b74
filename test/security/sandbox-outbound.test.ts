/**
 * The sandbox's outgoing calls (webhook notifications, collection verification) go where anyone with an API
 * key points them, so they never reach a private network: an address in the URL, or every address a name
 * resolves to, is checked, and the call connects to the checked address. Before, a webhook at
 * 169.254.169.254 (the cloud metadata service) or 10.0.0.1 was called like any other, and the delivery log
 * kept the start of the answer for anyone with the key to read.
 */
import dns from 'node:dns';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { TEST_NUMBERS } from '../../src/sandbox/index.js';
import { startReceiver, startSandbox } from '../sandbox/harness.js';

const SARAH = TEST_NUMBERS.find((t) => t.nameOnNetwork === 'Sarah Nakato')!.phonenumber;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  vi.restoreAllMocks();
  while (cleanups.length) await cleanups.pop()!();
});

async function sandbox() {
  const sb = await startSandbox({ allowHttpWebhooks: true });
  cleanups.push(() => sb.close());
  return sb;
}
async function receiver(reply?: (body: unknown) => string) {
  const r = await startReceiver(reply ? { reply } : {});
  cleanups.push(() => r.close());
  return r;
}

/** Names resolve as given here (as a hostile DNS zone would answer); any other name as usual. */
function resolveAs(names: Record<string, string[]>): void {
  const original = dns.lookup.bind(dns) as (...args: unknown[]) => void;
  vi.spyOn(dns, 'lookup').mockImplementation(((
    hostname: string,
    options: unknown,
    callback: (...args: unknown[]) => void,
  ) => {
    const addresses = names[hostname];
    if (!addresses) return original(hostname, options, callback);
    const all = addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    const wantsAll = typeof options === 'object' && options !== null && (options as { all?: boolean }).all;
    if (wantsAll) callback(null, all);
    else callback(null, all[0]!.address, all[0]!.family);
  }) as never);
}

const PRIVATE = /does not call private or internal addresses/;

describe('webhook notifications', () => {
  it('are never sent to a private, link-local or unique-local address written in the target', async () => {
    const sb = await sandbox();
    const targets = [
      'https://10.0.0.1/hook',
      'https://169.254.169.254/latest/meta-data/',
      'https://[fd00::1]/hook',
      'https://[::ffff:10.0.0.1]/hook',
      'https://100.64.0.1/hook',
    ];
    for (const target of targets)
      expect((await sb.api('POST', '/webhooks', { json: { event: 'contact.created', target } })).status).toBe(201);
    await sb.api('POST', '/contacts', { json: { phone_number: SARAH, first_name: 'S', last_name: 'N' } });
    await sb.controls.idle();
    const log = sb.controls.deliveries();
    expect(log.map((d) => d.target).sort()).toEqual([...targets].sort());
    for (const delivery of log)
      expect(delivery).toMatchObject({
        status: null,
        outcome: 'retry_scheduled',
        error: expect.stringMatching(PRIVATE),
      });
    expect(log.find((d) => d.target.includes('169.254'))?.error).toMatch(/169\.254\.169\.254 is linkLocal/);
  });

  it('are never sent to a name that resolves to a private address, even when it also resolves to a public one', async () => {
    resolveAs({ 'metadata.example': ['169.254.169.254'], 'rebind.example': ['93.184.215.14', '10.0.0.7'] });
    const sb = await sandbox();
    for (const target of ['https://metadata.example/hook', 'https://rebind.example/hook']) {
      await sb.api('POST', '/webhooks', { json: { event: 'contact.created', target } });
    }
    await sb.api('POST', '/contacts', { json: { phone_number: SARAH, first_name: 'S', last_name: 'N' } });
    await sb.controls.idle();
    const errors = Object.fromEntries(sb.controls.deliveries().map((d) => [d.target, d.error]));
    expect(errors['https://metadata.example/hook']).toMatch(/169\.254\.169\.254 is linkLocal/);
    expect(errors['https://rebind.example/hook']).toMatch(/10\.0\.0\.7 is private/);
  });

  it('reach a bot on loopback, and the log keeps status and timing, never the answer', async () => {
    const sb = await sandbox();
    const bot = await receiver(() => 'session=SECRET-ANSWER-BODY');
    await sb.api('POST', '/webhooks', {
      json: { event: 'contact.created', target: `${bot.url.replace('127.0.0.1', 'localhost')}/hook` },
    });
    await sb.api('POST', '/contacts', { json: { phone_number: SARAH, first_name: 'S', last_name: 'N' } });
    await sb.controls.idle();
    expect(bot.received).toHaveLength(1);
    const [delivery] = sb.controls.deliveries();
    expect(delivery).toMatchObject({ status: 200, outcome: 'delivered', duration_ms: expect.any(Number) });
    expect(JSON.stringify(sb.controls.deliveries())).not.toContain('SECRET-ANSWER-BODY');
    const listed = await sb.raw('/sandbox/deliveries', { headers: { authorization: 'Token test-key' } });
    expect(listed.status).toBe(200);
    expect(JSON.stringify(listed.body)).not.toContain('SECRET-ANSWER-BODY');
  });
});

describe('collection verification', () => {
  it('is not asked of a name that resolves to a private address; a loopback one still answers', async () => {
    const verifier = await receiver(
      (body) => `REJECT ${(body as { remote_transaction_id: string }).remote_transaction_id} not ours`,
    );
    const port = new URL(verifier.url).port;
    resolveAs({ 'verify.internal': ['127.0.0.1', '192.168.1.20'], 'verify.local': ['127.0.0.1'] });
    const sb = await sandbox();

    sb.controls.setOrganization({
      verificationUrl: `http://verify.internal:${port}/verify`,
      acceptCollectionsByDefault: true,
    });
    const refused = await sb.controls.sendCollection({ phonenumber: SARAH, amount: '1000', currency: 'UGX' });
    expect(verifier.received).toHaveLength(0);
    expect(refused.status).toBe('successful');

    sb.controls.setOrganization({ verificationUrl: `http://verify.local:${port}/verify` });
    const asked = await sb.controls.sendCollection({ phonenumber: SARAH, amount: '1001', currency: 'UGX' });
    expect(verifier.received).toHaveLength(1);
    expect(asked.status).toBe('failed');
  });
});
