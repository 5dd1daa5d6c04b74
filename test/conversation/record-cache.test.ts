import { describe, expect, it, vi } from 'vitest';
import { MemoryStore } from '../../src/conversation/memory-store.js';
import { recordJson, withAnswer, type ConversationRecord, type Entry } from '../../src/conversation/ledger.js';
import { RECORD_KEPT_MS, RecordCache } from '../../src/conversation/record-cache.js';

describe('RecordCache', () => {
  it('keeps what it wrote or read for a minute and drops it then, with nobody asking', async () => {
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
      pass(RECORD_KEPT_MS / 2 + 1);
      expect(cache.size).toBe(1);
      expect(cache.peek('conv:a')).toBeUndefined();
      expect(cache.peek('conv:b')?.version).toBe(1);
      // A write renews the minute.
      await cache.write('conv:b', { ledger: [] }, 1);
      pass(RECORD_KEPT_MS - 1);
      expect(cache.peek('conv:b')?.version).toBe(2);
      pass(2);
      expect(cache.size).toBe(0);
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

describe('recordJson', () => {
  const newSession = () => ({ flow: 'menu' as const, runId: 'r', snapshot: { value: 'ask', context: { n: 1 } }, expiresAt: 5, ended: false });
  const session = newSession();
  const entry = (id: string) => [id, { text: `screen ${id}`, final: false }] as Entry;

  it('is the record as JSON.stringify writes it, whatever it holds', () => {
    const records: ConversationRecord[] = [
      { ledger: [] },
      { session, ledger: [entry('a'), entry('b')], channel: { hop: 2, seen: 'x"y' }, profile: { lang: 'sw' }, run: { id: 't', late: true } },
      { session, ledger: [entry('a')], channel: undefined, run: undefined },
      { ledger: [['p', 'pending']], channel: 'plain' },
    ];
    for (const record of records) expect(JSON.parse(recordJson(record))).toEqual(JSON.parse(JSON.stringify(record)));
    for (const record of records) expect(recordJson(record)).toHaveLength(JSON.stringify(record).length);
  });

  it('serialises a session and a ledger entry once, however many writes hold them', async () => {
    const store = new MemoryStore();
    const cache = new RecordCache(store, 600);
    const session = newSession();
    const first = entry('a');
    const stringify = vi.spyOn(JSON, 'stringify');
    try {
      const one = await cache.write('conv:j', { session, ledger: [first] }, null);
      const two = await cache.write('conv:j', { session, ledger: withAnswer(one!.record.ledger, 'b', { text: 'next', final: false }), channel: { hop: 1 } }, one!.version);
      await cache.write('conv:j', { ...two!.record, run: { id: 't' } }, two!.version);
      const of = (value: unknown) => stringify.mock.calls.filter(([arg]) => arg === value).length;
      expect(of(session)).toBe(1);
      expect(of(first)).toBe(1);
    } finally {
      stringify.mockRestore();
    }
    expect((await store.get('conv:j'))?.snapshot).toEqual({ session, ledger: [first, ['b', { text: 'next', final: false }]], channel: { hop: 1 }, run: { id: 't' } });
  });
});
