/**
 * On Sentinel, a notification is taken (its add resolves, so the receiver answers 200) only once a replica
 * holds it: a failover drops the old master's last writes, and the service does not send an acknowledged
 * notification again. Real servers (ports 7070-7077): a master, its replica and three Sentinels; the replica
 * stopped (SIGSTOP: connected, answering nothing) takes no job, so the add is refused, then taken again once
 * the replica runs. A follow-up's queue (`waited`) waits the same, but goes on with a warning line instead.
 */
import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { BullQueue, NotReplicatedError } from '../../src/notifications/queue.js';
import { startSentinelSet, stopAll } from './servers.js';

afterAll(stopAll);

describe('a queue on a master with a replica and Sentinels', () => {
  it('takes a job once the replica holds it, and refuses one the replica does not take', async () => {
    const sentinelPorts = [7075, 7076, 7077];
    const { replica } = await startSentinelSet('q', 7070, 7071, sentinelPorts);
    const target = {
      mode: 'sentinel' as const,
      sentinels: sentinelPorts.map((port) => ({ host: '127.0.0.1', port })),
      name: 'q',
      tls: false,
    };
    const queue = new BullQueue<{ n: number }>(target, 'replicated', {
      replicated: 'required',
      logger: createLogger('silent'),
    });
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const followUps = new BullQueue<{ n: number }>(target, 'replicated-follow-ups', {
      replicated: 'waited',
      logger: createLogger('warn', sink),
    });
    try {
      await queue.add({ n: 1 });
      await followUps.add({ n: 1 });
      expect(lines.join('')).not.toMatch(/not yet on a replica/);
      replica.process.kill('SIGSTOP');
      try {
        await expect(queue.add({ n: 2 })).rejects.toBeInstanceOf(NotReplicatedError);
        // Waited for as long, then taken all the same: a payment's way never fails for a lagging replica.
        await followUps.add({ n: 2 });
        expect(lines.join('')).toMatch(/a job not yet on a replica; going on/);
      } finally {
        replica.process.kill('SIGCONT');
      }
      await queue.add({ n: 3 });
      expect(await queue.depth()).toBe(3);
      expect(await followUps.depth()).toBe(2);
    } finally {
      await queue.close();
      await followUps.close();
    }
  }, 120_000);
});
