/**
 * The product as it is run: startApp with the four WhatsApp settings against a local Graph API server and
 * the embedded sandbox. A user pays someone by tapping the buttons and rows the product sent, and another by
 * typing only; the sandbox's webhook brings the outcome, pushed into the chat. A redelivered confirmation
 * gets no second answer and pays nothing twice.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startApp, type RunningApp } from '../../../src/app.js';
import { loadConfig } from '../../../src/config.js';
import { createLogger } from '../../../src/log.js';
import { startFakeGraphApi, type FakeGraphApi } from './fake-graph-api.js';
import { optionsOf, whatsappEnv, wordsOf, WhatsAppUser } from './deliveries.js';
import { productDatabase } from '../../journal/server-database.js';

let app: RunningApp | undefined;
let graph: FakeGraphApi | undefined;
afterEach(async () => {
  await app?.stop();
  await graph?.close();
  app = graph = undefined;
});

async function start(): Promise<{ running: RunningApp; graph: FakeGraphApi }> {
  graph = await startFakeGraphApi();
  app = await startApp(loadConfig({ ...(await productDatabase()), PORT: '0', ...whatsappEnv(graph) }), {
    logger: createLogger('silent'),
  });
  return { running: app, graph };
}

const payments = () => app!.sandbox!.controls.payments() as Array<Record<string, any>>;

describe('a WhatsApp user pays someone', () => {
  it('by tapping the buttons and rows the product sent; the outcome is pushed into the chat', async () => {
    const { running, graph } = await start();
    const user = new WhatsAppUser(running.url, graph, '256772300001');

    const menu = await user.say('Hi');
    expect(menu.interactive.type).toBe('list');
    expect(optionsOf(menu).map((o) => o.title)).toEqual(expect.arrayContaining(['Pay someone', 'Request money']));
    const kinds = await user.tap('Pay someone');
    expect(kinds.interactive.type).toBe('button');
    await user.tap('Mobile money');
    await user.say('+256772000001');
    await user.say('Sarah');
    await user.say('Nakato');
    const currency = await user.say('5000');
    expect(optionsOf(currency).map((o) => o.title)).toContain('UGX');
    const summary = await user.tap('UGX');
    expect(wordsOf(summary)).toMatch(/5,000 UGX.*Sarah Nakato.*\+256772000001/s);
    const submitted = await user.tap('Confirm');
    expect(submitted.type).toBe('text');
    expect(wordsOf(submitted)).toMatch(/^Sent: 5,000 UGX to Sarah Nakato\. Ref MC-[A-Z0-9]+\./);
    expect(payments()).toHaveLength(1);
    expect(payments()[0]).toMatchObject({ amount: '5000.00', metadata: { chat: 'whatsapp:256772300001' } });

    // The sandbox settles the payment and calls the product's webhook: the outcome reaches the chat as text.
    const sentBefore = user.received.length;
    const told = (await graph.waitFor(user.waId, sentBefore + 1)).at(-1)!;
    expect(told.type).toBe('text');
    expect(wordsOf(told)).toMatch(/5,?000/);
    // Every message went to the user, from the product's number, with the product's token (checked by the server).
    expect(graph.refused).toEqual([]);
  });

  it('by typing only: labels and numbers pick choices; a redelivered confirmation pays and answers nothing twice', async () => {
    const { running, graph } = await start();
    const user = new WhatsAppUser(running.url, graph, '256772300002');

    await user.say('menu');
    await user.say('1'); // Pay someone
    await user.say('mobile money');
    await user.say('0772000001');
    await user.say('Sarah');
    await user.say('Nakato');
    await user.say('5000');
    expect(wordsOf(await user.say('UGX'))).toMatch(/Sarah Nakato/);
    expect(wordsOf(await user.say('Confirm'))).toMatch(/^Sent: 5,000 UGX to Sarah Nakato\. Ref MC-[A-Z0-9]+\./);
    expect(payments()).toHaveLength(1);

    const answered = user.received.length;
    expect((await user.redeliver()).status).toBe(200);
    // The user's messages are worked in order: once "help" is answered, the redelivery has been worked too.
    const help = await user.say('help');
    expect(wordsOf(help)).toMatch(/menu - main menu/);
    const since = user.received.slice(answered);
    expect(since.filter((m) => !/menu - main menu/.test(wordsOf(m)) && !/5,?000/.test(wordsOf(m)))).toEqual([]);
    expect(payments()).toHaveLength(1);
  });
});
