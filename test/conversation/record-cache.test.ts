import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/conversation/memory-store.js';
import { RECORD_KEPT_MS, RecordCache } from '../../src/conversation/record-cache.js';

describe('RecordCache', () => {
  it('keeps what it wrote or read for a minute, and a purge drops what is older', async () => {
    let now = 1_000;
    const store = new MemoryStore();
    const cache = new RecordCache(store, 600, () => now);
    const written = await cache.write('conv:a', { ledger: [] }, null);
    expect(cache.peek('conv:a')).toEqual(written);
    now += RECORD_KEPT_MS / 2;
    await store.set('conv:b', { ledger: [] }, null, 600);
    await cache.read('conv:b');
    expect(cache.size).toBe(2);
    now += RECORD_KEPT_MS / 2 + 1;
    cache.purge();
    expect(cache.size).toBe(1);
    expect(cache.peek('conv:a')).toBeUndefined();
    expect(cache.peek('conv:b')?.version).toBe(1);
    now += RECORD_KEPT_MS;
    cache.purge();
    expect(cache.size).toBe(0);
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
