import { describe, expect, it } from 'vitest';
import { KeyedQueue } from '../../src/conversation/channels/keyed-queue.js';

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

describe('KeyedQueue', () => {
  it('runs one key in order, other keys alongside, and survives a failed task', async () => {
    const queue = new KeyedQueue();
    const log: string[] = [];
    const first = gate();
    const a1 = queue.run('a', async () => {
      log.push('a1 start');
      await first.opened;
      log.push('a1 end');
      throw new Error('a1 failed');
    });
    const a2 = queue.run('a', async () => {
      log.push('a2');
      return 2;
    });
    await queue.run('b', async () => log.push('b'));
    expect(log).toEqual(['a1 start', 'b']);
    first.open();
    await expect(a1).rejects.toThrow('a1 failed');
    await expect(a2).resolves.toBe(2);
    expect(log).toEqual(['a1 start', 'b', 'a1 end', 'a2']);
  });

  it('idle() waits for queued work', async () => {
    const queue = new KeyedQueue();
    const g = gate();
    let done = false;
    void queue.run('a', async () => {
      await g.opened;
      done = true;
    });
    const idle = queue.idle().then(() => done);
    g.open();
    await expect(idle).resolves.toBe(true);
  });
});
