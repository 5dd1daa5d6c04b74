/**
 * Whole conversations through the real Bolt app over real HTTP, with a scripted engine: the slash command,
 * buttons, the answer modal, and where each later answer goes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Inbound, Prompt } from '../../../src/conversation/types.js';
import { RESPONSE_URL_USES } from '../../../adapters/slack/reply.js';
import {
  ScriptedEngine,
  TEAM,
  USER,
  buttonLabelled,
  buttonOf,
  startRig,
  textOf,
  triggerId,
  type Rig,
} from './harness.js';

/** A pay flow as the engine would walk it: menu, phone, amount, confirm, done. */
function payScript(inbound: Inbound): Prompt {
  if (inbound.start === 'menu' || inbound.nav === 'home') {
    return {
      text: 'What do you want to do?',
      choices: [
        { id: 'pay', label: 'Pay someone' },
        { id: 'request', label: 'Request money' },
      ],
      final: false,
    };
  }
  if (inbound.nav === 'cancel') return { text: 'Cancelled.', final: true };
  if (inbound.choice === 'pay' || inbound.start === 'pay')
    return { text: 'Phone number to pay?', input: 'phone', final: false };
  if (inbound.text === '0772123456') return { text: 'How much?', input: 'amount', final: false };
  if (inbound.text === '5000') {
    return {
      text: 'Pay UGX 5,000 to +256772123456 <Okello & Sons>?',
      choices: [
        { id: 'yes', label: 'Confirm' },
        { id: 'no', label: 'No' },
      ],
      final: false,
    };
  }
  if (inbound.choice === 'yes') return { text: 'Paid UGX 5,000. Reference P-1.', final: true };
  return { text: `Not understood: ${inbound.text ?? inbound.choice ?? ''}`, final: false };
}

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

describe('a payment with buttons and the answer modal', () => {
  it('walks menu -> pay -> phone (modal) -> amount (modal) -> confirm (button) -> done', async () => {
    const engine = new ScriptedEngine(payScript);
    rig = await startRig(engine);
    const { sender, fake } = rig;

    // /momo: acknowledged with the menu itself, ephemeral, choices as buttons.
    const commandTrigger = triggerId();
    const res = await sender.command('', { trigger: commandTrigger });
    expect(res.status).toBe(200);
    const menu = (await res.json()) as { response_type: string; text: string; blocks: any[] };
    expect(menu.response_type).toBe('ephemeral');
    expect(textOf(menu.blocks)).toBe('What do you want to do?');
    const pay = buttonLabelled(menu.blocks, 'Pay someone');
    expect(pay).toMatchObject({ action_id: 'momo_choice_0', value: 'pay' });
    expect(buttonLabelled(menu.blocks, 'Request money')).toMatchObject({
      action_id: 'momo_choice_1',
      value: 'request',
    });
    for (const nav of ['back', 'home', 'cancel']) expect(buttonOf(menu.blocks, `momo_nav_${nav}`).value).toBe(nav);

    // Pick "Pay someone": acknowledged at once, the next prompt replaces the message through response_url.
    const clickTrigger = triggerId();
    expect((await sender.click(pay, 'r1', clickTrigger)).status).toBe(200);
    const askPhone = await fake.next('respond');
    expect(askPhone.id).toBe('r1');
    expect(askPhone.body).toMatchObject({ response_type: 'ephemeral', replace_original: true });
    expect(textOf(askPhone.body.blocks)).toBe('Phone number to pay?');
    const answer = buttonOf(askPhone.body.blocks, 'momo_answer');
    expect(answer.value).toBe('phone');

    // "Answer" opens the modal with the click's trigger_id; the submission is the text answer.
    const answerTrigger = triggerId();
    await sender.click(answer, 'r2', answerTrigger);
    const opened = await fake.next('views.open');
    expect(opened.body.trigger_id).toBe(answerTrigger);
    expect(opened.body.view).toMatchObject({ type: 'modal', callback_id: 'momo_answer' });
    expect(opened.body.view.blocks[0].element.type).toBe('plain_text_input');
    expect(opened.body.view.blocks[0].label.text).toBe('Phone number');
    expect(JSON.parse(opened.body.view.private_metadata)).toEqual({ responseUrl: fake.responseUrl('r2') });
    const submitted = await sender.submit(opened.body.view, ' 0772123456 ');
    expect(submitted.status).toBe(200);
    expect(await submitted.text()).toBe('');
    const askAmount = await fake.next('respond');
    expect(askAmount.id).toBe('r2');
    expect(textOf(askAmount.body.blocks)).toBe('How much?');

    await sender.click(buttonOf(askAmount.body.blocks, 'momo_answer'), 'r3');
    await sender.submit((await fake.next('views.open')).body.view, '5000');
    const confirm = await fake.next('respond');
    expect(confirm.id).toBe('r3');
    // A prompt's words are plain text in blocks, escaped in the fallback text.
    expect(textOf(confirm.body.blocks)).toBe('Pay UGX 5,000 to +256772123456 <Okello & Sons>?');
    expect(confirm.body.blocks[0].text.type).toBe('plain_text');
    expect(confirm.body.text).toBe('Pay UGX 5,000 to +256772123456 &lt;Okello &amp; Sons&gt;?');

    await sender.click(buttonLabelled(confirm.body.blocks, 'Confirm'), 'r4');
    const done = await fake.next('respond');
    expect(done.id).toBe('r4');
    expect(textOf(done.body.blocks)).toBe('Paid UGX 5,000. Reference P-1.');
    expect(done.body.blocks.filter((b: any) => b.type === 'actions')).toEqual([]);

    // What the engine saw: one conversation, the user, Slack's trigger ids as message ids.
    expect(engine.inbounds.map(({ start, choice, text, nav }) => ({ start, choice, text, nav }))).toEqual([
      { start: 'menu', choice: undefined, text: undefined, nav: undefined },
      { start: undefined, choice: 'pay', text: undefined, nav: undefined },
      { start: undefined, choice: undefined, text: '0772123456', nav: undefined },
      { start: undefined, choice: undefined, text: '5000', nav: undefined },
      { start: undefined, choice: 'yes', text: undefined, nav: undefined },
    ]);
    for (const inbound of engine.inbounds) {
      expect(inbound).toMatchObject({ channel: 'slack', conversationId: `${TEAM}:${USER}`, userId: USER });
    }
    expect(engine.inbounds[0]?.messageId).toBe(commandTrigger);
    expect(engine.inbounds[1]?.messageId).toBe(clickTrigger);
    expect(new Set(engine.inbounds.map((i) => i.messageId)).size).toBe(5);
    // Nothing went by direct message, and the bot token was verified once at start.
    expect(fake.of('chat.postMessage')).toEqual([]);
    expect(fake.of('auth.test')).toHaveLength(1);
  });

  it('maps /momo words to flows, navigation and free-text answers', async () => {
    const engine = new ScriptedEngine(payScript);
    rig = await startRig(engine);
    const cases: Array<[string, Partial<Inbound>]> = [
      ['pay', { start: 'pay' }],
      ['REQUEST', { start: 'request' }],
      ['check', { start: 'check' }],
      ['data', { start: 'data' }],
      ['pin', { start: 'pin' }],
      ['cancel', { nav: 'cancel' }],
      ['home', { nav: 'home' }],
      ['0772123456', { text: '0772123456' }],
      ['pay 5000', { text: 'pay 5000' }],
    ];
    for (const [text, expected] of cases) {
      const res = await rig.sender.command(text);
      expect(res.status).toBe(200);
      const inbound = engine.inbounds.at(-1)!;
      const { start, nav, choice } = inbound;
      expect({ start, nav, choice, text: inbound.text }).toEqual({
        start: undefined,
        nav: undefined,
        choice: undefined,
        text: undefined,
        ...expected,
      });
    }
    // `/momo <answer>` is answered in the command's own ack.
    const answered = (await (await rig.sender.command('0772123456')).json()) as { blocks: any[] };
    expect(textOf(answered.blocks)).toBe('How much?');
  });

  it('sends Back / Home / Cancel clicks as navigation', async () => {
    const engine = new ScriptedEngine(payScript);
    rig = await startRig(engine);
    for (const nav of ['back', 'home', 'cancel'] as const) {
      await rig.sender.click({ action_id: `momo_nav_${nav}`, value: nav }, `nav-${nav}`);
      await rig.fake.next('respond');
      const inbound = engine.inbounds.at(-1)!;
      expect(inbound.nav).toBe(nav);
      expect('choice' in inbound).toBe(false);
    }
    expect(engine.inbounds).toHaveLength(3);
  });
});

describe('answers after the acknowledgement', () => {
  it('acks "working on it" when the engine is slow and posts its prompt to the command response_url', async () => {
    let release!: (prompt: Prompt) => void;
    const engine = new ScriptedEngine(() => new Promise<Prompt>((resolve) => (release = resolve)));
    rig = await startRig(engine, { ackTimeoutMs: 20 });
    const res = await rig.sender.command('pay', { responseId: 'slow' });
    const ack = (await res.json()) as { response_type: string; blocks: any[] };
    expect(ack.response_type).toBe('ephemeral');
    expect(textOf(ack.blocks)).toMatch(/working on it/i);
    release({ text: 'Phone number to pay?', input: 'phone', final: false });
    const later = await rig.fake.next('respond');
    expect(later.id).toBe('slow');
    expect(later.body.replace_original).toBe(false);
    expect(textOf(later.body.blocks)).toBe('Phone number to pay?');
  });

  it('shows a question told late as a direct message with its buttons, and a click on one reaches the engine', async () => {
    const engine = new ScriptedEngine(payScript);
    rig = await startRig(engine);
    const confirm = payScript({ channel: 'slack', conversationId: '', userId: '', messageId: '', text: '5000' });
    const late: Prompt = {
      ...confirm,
      text: `Nothing was sent: something went wrong on our side. Please answer again.\n${confirm.text}`,
    };
    await rig.slack.showLate({ channel: 'slack', conversationId: `${TEAM}:${USER}` }, late);
    const dm = await rig.fake.next('chat.postMessage');
    expect(dm.body.channel).toBe(USER);
    expect(textOf(dm.body.blocks)).toBe(late.text);
    expect(buttonLabelled(dm.body.blocks, 'No')).toMatchObject({ action_id: 'momo_choice_1', value: 'no' });
    expect(buttonOf(dm.body.blocks, 'momo_nav_cancel').value).toBe('cancel');

    // The button carries its own meaning: no record of the message is needed for the engine to be asked.
    await rig.sender.click(buttonLabelled(dm.body.blocks, 'Confirm'), 'late');
    const done = await rig.fake.next('respond');
    expect(done.id).toBe('late');
    expect(textOf(done.body.blocks)).toBe('Paid UGX 5,000. Reference P-1.');
    expect(engine.inbounds).toEqual([expect.objectContaining({ conversationId: `${TEAM}:${USER}`, choice: 'yes' })]);
  });

  it('tells a final outcome late as plain text', async () => {
    rig = await startRig(new ScriptedEngine(payScript));
    await rig.slack.showLate(
      { channel: 'slack', conversationId: `${TEAM}:${USER}` },
      { text: 'Paid UGX 5,000. Reference P-1.', final: true },
    );
    const dm = await rig.fake.next('chat.postMessage');
    expect(dm.body).toMatchObject({ channel: USER, text: 'Paid UGX 5,000. Reference P-1.' });
    expect(dm.body.blocks).toEqual([
      { type: 'section', text: { type: 'plain_text', text: 'Paid UGX 5,000. Reference P-1.', emoji: false } },
    ]);
  });

  it('apologises when the engine fails instead of leaving the user without an answer', async () => {
    rig = await startRig(
      new ScriptedEngine(() => {
        throw new Error('store down');
      }),
    );
    const ack = (await (await rig.sender.command('pay')).json()) as { blocks: any[] };
    expect(textOf(ack.blocks)).toMatch(/something went wrong/i);
  });

  it('keeps an empty modal open with a reason and does not call the engine', async () => {
    const engine = new ScriptedEngine(payScript);
    rig = await startRig(engine);
    await rig.sender.click({ action_id: 'momo_answer', value: 'amount' }, 'r1');
    const opened = await rig.fake.next('views.open');
    expect(opened.body.view.blocks[0].label.text).toBe('Amount');
    const res = await rig.sender.submit(opened.body.view, '   ');
    expect(await res.json()).toEqual({ response_action: 'errors', errors: { answer: 'Please type an answer.' } });
    expect(engine.inbounds).toEqual([]);
  });

  it(`uses a response_url at most ${RESPONSE_URL_USES} times, then sends a direct message`, async () => {
    const engine = new ScriptedEngine(payScript);
    rig = await startRig(engine);
    await rig.sender.click({ action_id: 'momo_answer', value: 'phone' }, 'budget');
    const view = (await rig.fake.next('views.open')).body.view;
    for (let i = 0; i < RESPONSE_URL_USES; i += 1) {
      await rig.sender.submit(view, '0772123456');
      expect((await rig.fake.next('respond')).id).toBe('budget');
    }
    await rig.sender.submit(view, '0772123456');
    const dm = await rig.fake.next('chat.postMessage');
    expect(dm.body.channel).toBe(USER);
    expect(textOf(dm.body.blocks)).toBe('How much?');
    expect(rig.fake.of('respond')).toHaveLength(RESPONSE_URL_USES);
    expect(engine.inbounds).toHaveLength(RESPONSE_URL_USES + 1);
  });

  it('falls back to a direct message when Slack refuses the response_url', async () => {
    rig = await startRig(new ScriptedEngine(payScript));
    rig.fake.script('respond', { status: 404, body: 'expired_url' });
    await rig.sender.click({ action_id: 'momo_choice_0', value: 'pay' }, 'expired');
    expect((await rig.fake.next('respond')).id).toBe('expired');
    const dm = await rig.fake.next('chat.postMessage');
    expect(dm.body.channel).toBe(USER);
    expect(textOf(dm.body.blocks)).toBe('Phone number to pay?');
    expect(buttonOf(dm.body.blocks, 'momo_answer').value).toBe('phone');
  });

  it('answers a message typed in the app DM with a direct message', async () => {
    const engine = new ScriptedEngine(payScript);
    rig = await startRig(engine);
    expect((await rig.sender.dm('pay', 'Ev001')).status).toBe(200);
    const dm = await rig.fake.next('chat.postMessage');
    expect(dm.body.channel).toBe(USER);
    expect(textOf(dm.body.blocks)).toBe('Phone number to pay?');
    expect(engine.inbounds[0]).toMatchObject({ start: 'pay', messageId: 'Ev001', conversationId: `${TEAM}:${USER}` });
  });
});
