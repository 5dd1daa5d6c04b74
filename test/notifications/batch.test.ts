import { describe, expect, it } from 'vitest';
import { createLimiter, tickBatcher } from '../../src/notifications/batch.js';

const turn = () => new Promise<void>((r) => setImmediate(r));

describe('tickBatcher', () => {
  it('flushes the items of one event-loop turn together, and answers each caller when that flush is done', async () => {
    const flushed: number[][] = [];
    let finish!: () => void;
    const add = tickBatcher<number>({
      flush: async (items) => {
        flushed.push(items);
        await new Promise<void>((r) => (finish = r));
      },
    });
    let answered = 0;
    const first = [1, 2, 3].map((i) => add(i).then(() => answered++));
    await turn();
    expect(flushed).toEqual([[1, 2, 3]]);
    expect(answered).toBe(0); // not before the flush finished
    finish();
    await Promise.all(first);
    expect(answered).toBe(3);

    const second = add(4);
    await turn();
    finish();
    await second;
    expect(flushed).toEqual([[1, 2, 3], [4]]);
  });

  it('rejects every caller of a batch whose flush failed, and goes on with the next', async () => {
    let fail = true;
    const add = tickBatcher<string>({
      flush: async () => {
        if (fail) throw new Error('redis down');
      },
    });
    const results = await Promise.allSettled([add('a'), add('b')]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    await expect(add('c')).resolves.toBeUndefined();
  });

  it('closes a full batch and starts another', async () => {
    const flushed: number[][] = [];
    const add = tickBatcher<number>({ flush: async (items) => void flushed.push(items), maxItems: 2 });
    await Promise.all([1, 2, 3, 4, 5].map(add));
    expect(flushed).toEqual([[1, 2], [3, 4], [5]]);
  });
});

describe('createLimiter', () => {
  it('runs at most n at once, the rest in order as places free up', async () => {
    const limit = createLimiter(2);
    let running = 0;
    let most = 0;
    const order: number[] = [];
    const results = await Promise.allSettled(
      Array.from({ length: 7 }, (_, i) =>
        limit(async () => {
          running++;
          most = Math.max(most, running);
          order.push(i);
          await turn();
          running--;
          if (i === 3) throw new Error('failed');
          return i;
        }),
      ),
    );
    expect(most).toBe(2);
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(results[3]!.status).toBe('rejected'); // a failure frees its place too
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(6);
  });
});
