/**
 * The notifier: a direct message through the Web API, retried on 429 (after Retry-After) and on transient
 * failures, then an error for the caller (the notification queue) to handle.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ScriptedEngine, TEAM, USER, startRig, textOf, type Rig } from './harness.js';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

const address = { channel: 'slack' as const, conversationId: `${TEAM}:${USER}` };
const noEngine = new ScriptedEngine(() => {
  throw new Error('the notifier does not use the engine');
});

describe('Slack notifier', () => {
  it('sends a direct message to the user of the conversation', async () => {
    rig = await startRig(noEngine);
    await rig.slack.notifier.send(address, 'Payment P-1 to <Okello> processed & paid.');
    const [call] = rig.fake.of('chat.postMessage');
    expect(call?.body.channel).toBe(USER);
    expect(call?.body.text).toBe('Payment P-1 to &lt;Okello&gt; processed &amp; paid.');
    expect(textOf(call?.body.blocks)).toBe('Payment P-1 to <Okello> processed & paid.');
  });

  it('waits out a 429 and retries', async () => {
    rig = await startRig(noEngine);
    rig.fake.script('chat.postMessage', {
      status: 429,
      headers: { 'retry-after': '0' },
      body: { ok: false, error: 'ratelimited' },
    });
    await rig.slack.notifier.send(address, 'Your request was paid.');
    const calls = rig.fake.of('chat.postMessage');
    expect(calls).toHaveLength(2);
    expect(calls[1]?.body.text).toBe('Your request was paid.');
  });

  it('retries transient server errors a few times, then throws', async () => {
    rig = await startRig(noEngine);
    rig.fake.script('chat.postMessage', { status: 503, body: 'unavailable' }, { status: 500, body: 'oops' });
    await rig.slack.notifier.send(address, 'Third time lucky.');
    expect(rig.fake.of('chat.postMessage')).toHaveLength(3);

    // The rig allows 2 retries: 3 failures in a row reach the caller.
    const failure = { status: 500, body: 'down' };
    rig.fake.script('chat.postMessage', failure, failure, failure);
    await expect(rig.slack.notifier.send(address, 'Never arrives.')).rejects.toThrow();
    expect(rig.fake.of('chat.postMessage')).toHaveLength(6);
  });

  it('does not retry a refusal by Slack (ok: false) and throws it', async () => {
    rig = await startRig(noEngine);
    rig.fake.script('chat.postMessage', { status: 200, body: { ok: false, error: 'channel_not_found' } });
    await expect(rig.slack.notifier.send(address, 'Hello')).rejects.toThrow(/channel_not_found/);
    expect(rig.fake.of('chat.postMessage')).toHaveLength(1);
  });

  it('refuses addresses that are not Slack conversations', async () => {
    rig = await startRig(noEngine);
    await expect(rig.slack.notifier.send({ channel: 'telegram', conversationId: '42' }, 'x')).rejects.toThrow(
      /telegram/,
    );
    await expect(rig.slack.notifier.send({ channel: 'slack', conversationId: 'U0001' }, 'x')).rejects.toThrow(
      /conversation id/,
    );
    expect(rig.fake.of('chat.postMessage')).toEqual([]);
  });
});
