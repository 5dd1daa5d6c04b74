import { describe, expect, it, vi } from 'vitest';
import { MemoryStore } from '../../src/store/memory-store.js';
import { PURGE_EVERY_MS, RECORD_KEPT_MS, RecordCache } from '../../src/conversation/engine/record-cache.js';

describe('RecordCache', () => {
  it('keeps what it wrote or read for a minute and drops it at the next purge, with nobody asking', async () => {
    vi.useFakeTimers();
    try {
      let now = 1_000;
      const store = new MemoryStore();
      const cache = new RecordCache(store, 600, () => now);
      const pass = (ms: number) => {
        now += ms;
        vi.advanceTimersByTime(ms);
      };
      const written = await cache.write('conv:a', { ledger: [] }, null);
      expect(cache.peek('conv:a')).toEqual(written);
      pass(RECORD_KEPT_MS / 2);
      await store.set('conv:b', { ledger: [] }, null, 600);
      await cache.read('conv:b');
      expect(cache.size).toBe(2);
      // Past its minute, `a` is gone at the next purge (every PURGE_EVERY_MS), nobody asking for it.
      pass(RECORD_KEPT_MS / 2 + PURGE_EVERY_MS);
      expect(cache.size).toBe(1);
      expect(cache.peek('conv:a')).toBeUndefined();
      expect(cache.peek('conv:b')?.version).toBe(1);
      // A write renews the minute.
      await cache.write('conv:b', { ledger: [] }, 1);
      pass(RECORD_KEPT_MS - 1);
      expect(cache.peek('conv:b')?.version).toBe(2);
      pass(PURGE_EVERY_MS + 1);
      expect(cache.size).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('stop() ends the purge: its timer is cleared, and a record past its minute stays till asked for', async () => {
    vi.useFakeTimers();
    try {
      let now = 1_000;
      const timers = vi.getTimerCount();
      const cache = new RecordCache(new MemoryStore(), 600, () => now);
      expect(vi.getTimerCount()).toBe(timers + 1);
      await cache.write('conv:a', { ledger: [] }, null);
      cache.stop();
      expect(vi.getTimerCount()).toBe(timers);
      now += RECORD_KEPT_MS + PURGE_EVERY_MS;
      vi.advanceTimersByTime(RECORD_KEPT_MS + PURGE_EVERY_MS);
      // Not purged (a purge would have dropped it, as above); asked for, it is expired all the same.
      expect(cache.size).toBe(1);
      expect(cache.peek('conv:a')).toBeUndefined();
      // Still written through after the stop (a run draining writes its outcome).
      expect((await cache.write('conv:b', { ledger: [] }, null))?.version).toBe(1);
    } finally {
      vi.useRealTimers();
    }
  });

  it('forgets a record whose compare-and-set lost, and keeps the newer of two versions', async () => {
    const store = new MemoryStore();
    const cache = new RecordCache(store, 600);
    await cache.write('conv:a', { ledger: [] }, null);
    await store.set('conv:a', { ledger: [], channel: 'elsewhere' }, 1, 600);
    expect(await cache.write('conv:a', { ledger: [] }, 1)).toBeNull();
    expect(cache.peek('conv:a')).toBeUndefined();
    expect((await cache.read('conv:a'))?.record.channel).toBe('elsewhere');
    expect(cache.peek('conv:a')?.version).toBe(2);
  });
});
