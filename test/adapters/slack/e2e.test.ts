/**
 * The Slack channel in the whole product (startApp: the real engine, flows, access policy and the embedded
 * sandbox), started with a signing secret, a bot token and SLACK_API_URL at a local Web API: a payment
 * made with `/momo`, buttons and the answer modal only, reaching the sandbox exactly once, and its outcome
 * coming back as a direct message when the service notifies.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { startApp, type RunningApp } from '../../../src/app.js';
import {
  BOT_TOKEN,
  FakeSlack,
  SIGNING_SECRET,
  SlackSender,
  TEAM,
  USER,
  buttonLabelled,
  buttonOf,
  textOf,
  triggerId,
} from './harness.js';
import { productDatabase } from '../../journal/server-database.js';

/** A sandbox test number registered as "Sarah Nakato"; payments to it succeed. */
const RECIPIENT = '0772000001';

let fake: FakeSlack;
let running: RunningApp;
let sender: SlackSender;
/** Our short ref of the payment, as the last screen names it. */
let shortRef: string | undefined;
beforeAll(async () => {
  fake = new FakeSlack();
  await fake.start();
  running = await startApp(
    loadConfig({
      ...(await productDatabase()),
      PORT: '0',
      LOG_LEVEL: 'silent',
      SLACK_SIGNING_SECRET: SIGNING_SECRET,
      SLACK_BOT_TOKEN: BOT_TOKEN,
      SLACK_API_URL: fake.apiUrl,
    }),
  );
  sender = new SlackSender(running.url, fake);
});
afterAll(async () => {
  await running?.stop();
  await fake?.close();
});

type Blocks = Array<Record<string, any>>;

/** What a person does on each screen of the pay flow: press a button, or answer in the modal. */
const STEPS: Array<[RegExp, { press: string; twice?: boolean } | { type: string }]> = [
  [/What do you want to send/, { press: 'Mobile money' }],
  [/phone number of the person/, { type: RECIPIENT }],
  [/first name/, { type: 'Sarah' }],
  [/last name/, { type: 'Nakato' }],
  [/Enter the amount/, { type: '5000' }],
  [/Choose the currency/, { press: 'UGX' }],
  // Confirm is delivered twice with the same trigger_id (a replay): the payment must still be made once.
  [/^Send 5,000 UGX of mobile money/, { press: 'Confirm', twice: true }],
];

describe('Slack end to end (real engine + sandbox)', () => {
  it('pays someone with /momo, buttons and the modal; one payment reaches the sandbox', async () => {
    const menu = (await (await sender.command('')).json()) as { blocks: Blocks };
    let blocks: Blocks = menu.blocks;
    const seen: string[] = [textOf(blocks)];
    let click = 0;
    await sender.click(buttonLabelled(blocks, 'Pay someone'), `e2e-${click}`);
    blocks = (await fake.next('respond')).body.blocks;

    for (
      let screen = 0;
      screen < 20 && !/Sent: [\d,]+ UGX to .+\. Ref MC-[A-Z0-9]+\./.test(textOf(blocks));
      screen += 1
    ) {
      const text = textOf(blocks);
      seen.push(text);
      const step = STEPS.find(([pattern]) => pattern.test(text));
      if (!step) throw new Error(`No step for screen: ${text}\nScreens so far: ${seen.join(' | ')}`);
      click += 1;
      const [, action] = step;
      let replayedOver: string | undefined;
      if ('press' in action) {
        const trigger = triggerId();
        await sender.click(buttonLabelled(blocks, action.press), `e2e-${click}`, trigger);
        if (action.twice) {
          replayedOver = textOf((await fake.next('respond')).body.blocks);
          await sender.click(buttonLabelled(blocks, action.press), `e2e-${click}`, trigger);
        }
      } else {
        await sender.click(buttonOf(blocks, 'momo_answer'), `e2e-${click}`);
        const opened = await fake.next('views.open');
        await sender.submit(opened.body.view, action.type);
      }
      const next = await fake.next('respond');
      expect(next.id).toBe(`e2e-${click}`);
      // A replayed delivery is answered with the first answer.
      if (replayedOver !== undefined) expect(textOf(next.body.blocks)).toBe(replayedOver);
      blocks = next.body.blocks;
    }
    shortRef = /Sent: 5,000 UGX to Sarah Nakato\. Ref (MC-[0-9A-Z]+)\./.exec(textOf(blocks))?.[1];
    expect(shortRef).toBeDefined();
    expect(blocks.filter((b) => b.type === 'actions')).toEqual([]);

    const page = await running.client.payments.list();
    const ours = page.results.filter(
      (p) => (p.metadata as Record<string, unknown> | null)?.chat === `slack:${TEAM}:${USER}`,
    );
    expect(ours).toHaveLength(1);
    expect(ours[0]).toMatchObject({ amount: '5000.00', currency: 'UGX', description: 'Mobile money payment' });
    // Every answer went through response_url: a direct message is only ever the service's news of the payment
    // (its first notice may already have come), never a screen of the conversation.
    const direct = fake.of('chat.postMessage').map((m) => textOf(m.body.blocks));
    const news = new RegExp(`^Payment ${shortRef} \\(service \\d+\\) of 5,000 UGX`);
    expect(direct.filter((text) => !news.test(text))).toEqual([]);
  });

  it('tells the user the outcome by direct message when the service notifies', async () => {
    await running.sandbox!.controls.advanceClock(600);
    const dm = await fake.next('chat.postMessage');
    expect(dm.body.channel).toBe(USER);
    // In the words of our record of the payment: the amount as the user gave it.
    // Our short ref, the service's id beside it.
    expect(textOf(dm.body.blocks)).toMatch(new RegExp(`Payment ${shortRef} \\(service \\d+\\) of 5,000 UGX`));
  });
});
