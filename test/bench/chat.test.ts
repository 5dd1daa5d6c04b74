/**
 * Smoke test of the chat-depth benchmark (no Redis, no network): both sides answer every update with the
 * right question, and the figures come out for every depth. Catches a harness that times nothing (an
 * adapter that returns before handling) or a side that stopped answering.
 */
import { describe, expect, it } from 'vitest';
import { runChatBench } from '../../bench/chat/chat.js';
import { analyze, categoryOf, moduleOf } from '../../bench/profile/analyze.js';

describe('bench/chat', () => {
  it('runs both sides to depth 20 with every reply checked', async () => {
    const result = await runChatBench(true);
    expect(result.checked).toEqual({ ours: true, peer: true });
    for (const depth of ['2', '10', '20']) {
      expect(result.ours[depth]!.samples).toBeGreaterThan(0);
      expect(result.ours[depth]!.wallMs).toBeGreaterThan(0);
      expect(result.peer[depth]!.wallMs).toBeGreaterThan(0);
    }
  }, 60_000);
});

describe('bench/profile/analyze', () => {
  it('groups a profile by module and category', () => {
    expect(moduleOf('file:///work/main/node_modules/@grammyjs/conversations/out/plugin.js')).toBe(
      '@grammyjs/conversations',
    );
    expect(moduleOf('file:///work/main/src/conversation/engine.ts')).toBe('src/conversation');
    expect(categoryOf('ioredis')).toMatch(/Redis/);
    const profile = {
      nodes: [
        { id: 1, callFrame: { functionName: '(root)', url: '', lineNumber: 0 }, children: [2, 3] },
        {
          id: 2,
          callFrame: { functionName: 'transition', url: 'file:///x/node_modules/xstate/dist/a.js', lineNumber: 0 },
        },
        { id: 3, callFrame: { functionName: '(idle)', url: '', lineNumber: 0 } },
      ],
      samples: [2, 2, 3],
      timeDeltas: [100, 100, 100],
      startTime: 0,
      endTime: 300,
    };
    expect(analyze(profile)).toContain('100.0%  XState');
  });
});
