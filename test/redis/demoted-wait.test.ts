/**
 * A master demoted while a replica check's `WAIT` blocks on it (a planned failover: `CLUSTER FAILOVER` or
 * `SENTINEL FAILOVER` turns the old master into a replica) ends the `WAIT` with `UNBLOCKED force unblock from
 * blocking operation, instance state changed (master -> replica?)`. The check says "not held" (the server holds
 * nothing now), as for a server found no master: a follow-up's queue then goes on with its warning line instead
 * of failing the intent it is added with (the cluster chaos runs of stop 43 logged "could not record the intent"
 * for it), and a money call's state is asked about again. Real servers on ports the OS has free: a master and
 * its replica, the replica stopped (SIGSTOP) so the `WAIT` blocks. One demoted between the `INFO` that found it
 * master and the `WAIT` refuses the `WAIT` (`ERR WAIT cannot be used with replica instances`): not held either.
 */
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { heldByReplica } from '../../src/redis/connect.js';
import { freePort } from '../ports.js';
import { until } from '../until.js';
import { startOwnRedis, startRedis, stopAll, untilInSync, withServer } from './servers.js';

afterAll(stopAll);

describe('a replica check on a master demoted under it', () => {
  it('says not held, not an error', async () => {
    const master = await startOwnRedis();
    const replica = await startRedis(await freePort(), ['--replicaof', '127.0.0.1', String(master.port)]);
    await untilInSync(replica.port);
    const client = new Redis({ port: master.port, maxRetriesPerRequest: 0 });
    try {
      replica.process.kill('SIGSTOP');
      await client.set('written', 'after the replica stopped');
      const held = heldByReplica(client, `redis://127.0.0.1:${master.port}`, 60_000).then(
        (answer) => ({ answer }),
        (error: Error) => ({ error: error.message }),
      );
      // The WAIT blocks (the replica answers nothing); then the master is turned into a replica.
      await until(
        'the WAIT blocked on the master',
        async () => /^blocked_clients:[1-9]/m.test(await withServer(master.port, (r) => r.info('clients'))),
        { everyMs: 50 },
      );
      await withServer(master.port, (r) => r.call('REPLICAOF', '127.0.0.1', String(replica.port)));
      expect(await held).toEqual({ answer: false });
      // Demoted between the INFO that found it master and the WAIT (here its INFO answered as before): the
      // replica refuses the WAIT ("ERR WAIT cannot be used with replica instances"), and it holds nothing.
      const before = `# Replication\r\nrole:master\r\nconnected_slaves:1\r\nslave0:ip=127.0.0.1,port=${replica.port},state=online,offset=1,lag=0\r\n`;
      // (The server closed the connection of the WAIT it ended.)
      const fresh = new Redis({ port: master.port });
      await fresh.ping();
      const demoted = Object.assign(fresh, { info: () => Promise.resolve(before) });
      expect(
        await heldByReplica(demoted, `redis://127.0.0.1:${master.port}`, 1_000).then(
          (answer) => ({ answer }),
          (error: Error) => ({ error: error.message }),
        ),
      ).toEqual({ answer: false });
      demoted.disconnect();
    } finally {
      replica.process.kill('SIGCONT');
      client.disconnect();
    }
  }, 60_000);
});
