/**
 * In a planned failover (`SENTINEL FAILOVER`) the old master keeps taking writes for seconds after its replica
 * left it to be promoted, and drops them when it follows the new master. A replica check on it must not call
 * them held. In that second the Sentinel leading the failover flags the promoted replica `disconnected` (it
 * kills the clients of the promoted server, its own link among them), and the old master has no replica
 * connected: a check that counted a `disconnected` replica down took the old master for one alone ("no failover
 * can drop what it alone holds") and called its writes held. A Sentinel chaos run of stop 44 lost a USSD
 * payer's outcome so: its notification acknowledged 200 in that second, its job gone with the old master's
 * writes. Real servers on ports the OS has free: a master, its replica and three Sentinels.
 */
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { heldByReplica } from '../../src/redis/connect.js';
import { freePorts } from '../ports.js';
import { until } from '../until.js';
import { startSentinelSet, stopAll, untilInSync } from './servers.js';

afterAll(stopAll);

describe('a replica check on the old master of a planned Sentinel failover', () => {
  it('does not take it for a master alone: the writes of that second are dropped', async () => {
    const [masterPort, replicaPort, ...sentinelPorts] = (await freePorts(5)) as [number, number, ...number[]];
    await startSentinelSet('held', masterPort, replicaPort, sentinelPorts, {
      args: ['--repl-diskless-sync-delay', '0'],
    });
    const target = {
      mode: 'sentinel' as const,
      sentinels: sentinelPorts.map((port) => ({ host: '127.0.0.1', port })),
      name: 'held',
      tls: false,
    };
    const old = new Redis({ port: masterPort, maxRetriesPerRequest: 0 });
    // The leader: the first Sentinel, which the check asks first.
    const leader = new Redis({ port: sentinelPorts[0] });
    try {
      await old.set('written', 'before the failover');
      expect(await heldByReplica(old, target)).toBe(true);
      await leader.call('SENTINEL', 'FAILOVER', 'held');
      const flags = async () => {
        const replicas = (await leader.call('SENTINEL', 'REPLICAS', 'held')) as string[][];
        return replicas.map((fields) => fields[fields.indexOf('flags') + 1]).join(' ');
      };
      // Asked every 5 ms (for up to 10 s): that state lasts about a second.
      await until(
        'the promoted replica flagged disconnected, none connected to the old master',
        async () =>
          /disconnected/.test(await flags()) && /^connected_slaves:0\b/m.test(await old.info('replication'))
            ? true
            : undefined,
        { timeoutMs: 10_000, everyMs: 5 },
      );
      expect(await old.info('replication')).toMatch(/^role:master\b/m);
      await old.set('written', 'in the failover');
      expect(await heldByReplica(old, target, 200)).toBe(false);
      // What calling it held would have promised: the old master, turned into the new one's replica, drops it.
      await untilInSync(masterPort);
      expect(await old.get('written')).toBe('before the failover');
    } finally {
      old.disconnect();
      leader.disconnect();
    }
  }, 60_000);
});
