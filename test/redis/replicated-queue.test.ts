/**
 * On Sentinel, a notification is taken (its add resolves, so the receiver answers 200) only once a replica
 * holds it: a failover drops the old master's last writes, and the service does not send an acknowledged
 * notification again. Real servers (ports 7070-7077): a master, its replica and three Sentinels; the replica
 * stopped (SIGSTOP: connected, answering nothing) takes no job, so the add is refused, then taken again once
 * the replica runs.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { BullQueue, NotReplicatedError } from '../../src/notifications/queue.js';
import { startSentinelSet, stopAll } from './servers.js';

afterAll(stopAll);

describe('a queue on a master with a replica and Sentinels', () => {
  it('takes a job once the replica holds it, and refuses one the replica does not take', async () => {
    const sentinelPorts = [7075, 7076, 7077];
    const { replica } = await startSentinelSet('q', 7070, 7071, sentinelPorts);
    const queue = new BullQueue<{ n: number }>(
      {
        mode: 'sentinel',
        sentinels: sentinelPorts.map((port) => ({ host: '127.0.0.1', port })),
        name: 'q',
        tls: false,
      },
      'replicated',
      { replicated: true, logger: createLogger('silent') },
    );
    try {
      await queue.add({ n: 1 });
      replica.process.kill('SIGSTOP');
      try {
        await expect(queue.add({ n: 2 })).rejects.toBeInstanceOf(NotReplicatedError);
      } finally {
        replica.process.kill('SIGCONT');
      }
      await queue.add({ n: 3 });
      expect(await queue.depth()).toBe(3);
    } finally {
      await queue.close();
    }
  }, 120_000);
});
