/**
 * Two instances of the product sharing one Redis (real, 127.0.0.1:6379, a unique key prefix): the
 * response_url budget and the event dedup hold across instances.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RedisStore } from '../../../src/store/redis-store.js';
import type { Prompt } from '../../../src/conversation/types.js';
import { RESPONSE_URL_USES } from '../../../adapters/slack/reply.js';
import { REDIS_URL, inspector, uniquePrefix } from '../../conversation/redis-helper.js';
import { FakeSlack, ScriptedEngine, USER, memoryLogger, startRig, textOf, type Rig } from './harness.js';

const prompt = (): Prompt => ({ text: 'How much?', input: 'amount', final: false });

let prefix: string;
let stores: RedisStore[];
let rigs: Rig[];
let fake: FakeSlack;
beforeEach(async () => {
  prefix = uniquePrefix('slack');
  stores = [
    new RedisStore({ url: REDIS_URL, keyPrefix: prefix }),
    new RedisStore({ url: REDIS_URL, keyPrefix: prefix }),
  ];
  rigs = [];
  fake = new FakeSlack();
  await fake.start();
});
afterEach(async () => {
  for (const rig of rigs) await rig.close();
  for (const store of stores) await store.close();
  await fake.close();
  await inspector(prefix).cleanup();
});

describe('two instances on one Redis', () => {
  it('share the 5-uses budget of a response_url', async () => {
    const engine = new ScriptedEngine(prompt);
    for (const store of stores) rigs.push(await startRig(engine, { store }, { fake }));
    await rigs[0]!.sender.click({ action_id: 'momo_answer', value: 'amount' }, 'shared');
    const view = (await fake.next('views.open')).body.view;
    // Submissions alternate between the instances, as a load balancer would send them.
    for (let i = 0; i < RESPONSE_URL_USES; i += 1) {
      await rigs[i % 2]!.sender.submit(view, '5000');
      expect((await fake.next('respond')).id).toBe('shared');
    }
    await rigs[1]!.sender.submit(view, '5000');
    const dm = await fake.next('chat.postMessage');
    expect(dm.body.channel).toBe(USER);
    expect(textOf(dm.body.blocks)).toBe('How much?');
    expect(fake.of('respond')).toHaveLength(RESPONSE_URL_USES);
  });

  it('drop an event retry that reaches the other instance', async () => {
    const engine = new ScriptedEngine(prompt);
    const { logger, next } = memoryLogger();
    rigs.push(await startRig(engine, { store: stores[0] }, { fake }));
    rigs.push(await startRig(engine, { store: stores[1], logger }, { fake }));
    await rigs[0]!.sender.dm('5000', 'EvShared');
    await fake.next('chat.postMessage');
    await rigs[1]!.sender.dm('5000', 'EvShared', { 'x-slack-retry-num': '1', 'x-slack-retry-reason': 'http_timeout' });
    expect(await next('slack: duplicate delivery dropped')).toMatchObject({ eventId: 'EvShared' });
    expect(engine.inbounds).toHaveLength(1);
    expect(fake.of('chat.postMessage')).toHaveLength(1);
  });
});
