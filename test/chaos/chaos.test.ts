/**
 * The chaos run, bounded: 50 pay conversations (USSD and Telegram) through two instances on one Redis with
 * every fault injected (see run.ts), the same checks as `npm run chaos`. Needs Redis (database 11, or
 * CHAOS_REDIS_URL).
 */
import { describe, expect, it } from 'vitest';
import { runChaos } from './run.js';

describe('chaos', () => {
  it('50 conversations: each confirmed payment made exactly once and told, none made unconfirmed', async () => {
    const result = await runChaos({ conversations: 50, concurrency: 12, faultEveryMs: 1500, redisUrl: process.env.CHAOS_REDIS_URL });
    expect(result.problems).toEqual([]);
    expect(result.faults.replacements).toBeGreaterThan(0);
    expect(result.faults.redisCuts).toBeGreaterThan(0);
    expect(result.faults.duplicateDeliveries).toBeGreaterThan(0);
    expect(result.faults['drop-after-commit']! + result.faults['slow-drop-after-commit']!).toBeGreaterThan(0);
    expect(result.records.some((r) => r.channel === 'telegram')).toBe(true);
    expect(result.line).toMatch(/^chaos: conversations=50 confirmed=\d+ payments=\d+ duplicates=0 lost=0 told=\d+$/);
    expect(result.payments).toBe(result.confirmed);
    expect(result.told).toBe(result.confirmed);
    expect(result.confirmed).toBeGreaterThanOrEqual(45);
    expect(result.ok).toBe(true);
  }, 150_000);
});
