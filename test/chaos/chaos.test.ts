/**
 * The chaos run, bounded: 30 pay conversations (USSD and Telegram) through two product instances that are
 * child processes on one Redis, with every fault of run.ts injected (instances killed with SIGKILL among
 * them) and the same checks as `npm run chaos`. Needs Redis (TEST_REDIS_URL, test/services.ts). On failure
 * the message holds the result line and the diagnosis of every failed conversation.
 */
import { describe, expect, it } from 'vitest';
import { TEST_REDIS_URL } from '../services.js';
import { runChaos } from './run.js';

describe('chaos', () => {
  it('30 conversations with kills: each confirmed payment made exactly once and told, none made unconfirmed, no instance dying by itself', async () => {
    const result = await runChaos({ conversations: 30, concurrency: 15, faultEveryMs: 2000, redisUrl: TEST_REDIS_URL });
    const report = [
      result.line,
      JSON.stringify(result.faults),
      ...result.failures,
      ...result.problems,
      ...result.gaveUp.map((g) => `gave up: ${g}`),
    ].join('\n');
    expect(result.line).toMatch(
      /^chaos: conversations=30 confirmed=\d+ payments=\d+ duplicates=\d+ lost=\d+ told=\d+ kills=\d+$/,
    );
    // The faults happened: kills, Redis cuts, duplicate deliveries, Telegram failing sends, answers lost after a commit.
    expect(result.kills, report).toBeGreaterThanOrEqual(1);
    expect(result.faults['redis-cut'], report).toBeGreaterThan(0);
    expect(result.faults.duplicateDeliveries, report).toBeGreaterThan(0);
    expect(
      result.faults['telegram-500']! + result.faults['telegram-502']! + result.faults['telegram-429']!,
      report,
    ).toBeGreaterThan(0);
    // An answer lost after the service committed, in any of the ways run.ts loses one (each is drawn at random).
    expect(
      result.faults['drop-after-commit']! +
        result.faults['slow-drop-after-commit']! +
        result.faults['5xx-after-commit']! +
        result.faults['kill-after-commit']!,
      report,
    ).toBeGreaterThan(0);
    expect(result.records.some((r) => r.channel === 'telegram')).toBe(true);
    // And money stayed right.
    expect(result.crashes, report).toEqual([]);
    expect(
      { payments: result.payments, duplicates: result.duplicates, lost: result.lost, told: result.told },
      report,
    ).toEqual({
      payments: result.confirmed,
      duplicates: 0,
      lost: 0,
      told: result.confirmed,
    });
    expect(result.confirmed, report).toBeGreaterThanOrEqual(27);
    // The journal: an intent per payment at the service, each confirmed one with its final state and a telling.
    expect(result.journal.line, report).toMatch(
      /^chaos: journal payments=\d+ intents=\d+ confirmed=\d+ final=\d+ told=\d+$/,
    );
    const j = result.journal.figures;
    expect({ intents: j.intents, final: j.final, told: j.told }, report).toEqual({
      intents: result.payments,
      final: j.confirmed,
      told: j.confirmed,
    });
    expect(j.confirmed, report).toBe(result.confirmed);
    expect(result.problems, report).toEqual([]);
    expect(result.ok, report).toBe(true);
  }, 400_000);
});
