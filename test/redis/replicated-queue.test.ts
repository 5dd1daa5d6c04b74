/**
 * On Sentinel, what a failover must not drop waits for a replica to hold it: a failover drops the old master's
 * last writes. A notification is taken (its add resolves, so the receiver answers 200) only once a replica
 * holds it, as the service does not send an acknowledged notification again; an outcome kept for a USSD
 * user's next dial is told only once a replica holds it; the store says whether its writes are held (the
 * runner asks before a money-moving call). Real servers on free ports: a master, its replica and three
 * Sentinels; the replica stopped (SIGSTOP: connected, answering nothing) takes nothing, so the add is refused,
 * then taken again once the replica runs. A follow-up's queue (`waited`) waits the same, but goes on with a
 * warning line instead. Callers asking at once share a WAIT (it blocks the connection while it waits).
 */
import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ussdInbox, storedNotes } from '../../src/conversation/channels/ussd-inbox.js';
import { keys } from '../../src/store/keys.js';
import { RedisStore } from '../../src/store/redis-store.js';
import { createLogger } from '../../src/log.js';
import { BullQueue, NotReplicatedError } from '../../src/notifications/queue.js';
import { closeRedis, connectRedis, replicaCheck, type RedisClient } from '../../src/redis/connect.js';
import { freePorts } from '../ports.js';
import { until } from '../until.js';
import { startRedis, startSentinelSet, stopAll, waitCalls, type Server } from './servers.js';

const [masterPort, replicaPort, secondReplicaPort, ...sentinelPorts] = (await freePorts(6)) as [
  number,
  number,
  number,
  ...number[],
];
const target = {
  mode: 'sentinel' as const,
  sentinels: sentinelPorts.map((port) => ({ host: '127.0.0.1', port })),
  name: 'q',
  tls: false,
};
let replica: Server;

/**
 * The master sends a replica its data at once (no diskless-sync delay, 5 s by default): a replica started here, or
 * one put back to replicating after it left, is in sync within the test's wait, not five seconds later.
 */
const SERVER_ARGS = ['--repl-diskless-sync-delay', '0'];

beforeAll(async () => {
  ({ replica } = await startSentinelSet('q', masterPort, replicaPort, sentinelPorts, { args: SERVER_ARGS }));
}, 120_000);
afterAll(stopAll);

describe('a queue on a master with a replica and Sentinels', () => {
  it('takes a job once the replica holds it, and refuses one the replica does not take', async () => {
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

describe('the store on a master with a replica and Sentinels', () => {
  it('says whether a replica holds its writes, and keeps an outcome for the dial only once one does', async () => {
    const store = new RedisStore({ url: target, keyPrefix: `replicated-${Date.now()}:` });
    const address = { channel: 'ussd' as const, conversationId: '+256700555111' };
    const inbox = ussdInbox(store);
    try {
      await store.set('probe', { n: 1 }, null, 60);
      expect(await store.replicated?.('probe')).toBe(true);
      await inbox.send(address, 'Done: 5,000 UGX reached +256772000001');
      replica.process.kill('SIGSTOP');
      try {
        await store.set('probe', { n: 2 }, 1, 60);
        expect(await store.replicated?.('probe')).toBe(false);
        // Written on the master, not held by the replica: not told (the notification's retry keeps it again).
        await expect(inbox.send(address, 'Done: 7,000 UGX reached +256772000001')).rejects.toThrow(/not on a replica/);
      } finally {
        replica.process.kill('SIGCONT');
      }
      await inbox.send(address, 'Done: 7,000 UGX reached +256772000001');
      const notes = storedNotes((await store.get(keys.pending(address)))?.snapshot).map((note) => note.text);
      expect(notes).toEqual(['Done: 5,000 UGX reached +256772000001', 'Done: 7,000 UGX reached +256772000001']);
    } finally {
      await store.delete('probe');
      await store.delete(keys.pending(address));
      await store.close();
    }
  }, 120_000);

  it('has nothing to wait for on one server', () => {
    const store = new RedisStore({ url: `redis://127.0.0.1:${masterPort}` });
    expect(store.replicated).toBeUndefined();
    return store.close();
  });
});

describe('the writes of many callers at once', () => {
  it('wait for a replica together: two WAITs at most hold the connection, not one each', async () => {
    const store = new RedisStore({ url: target, keyPrefix: `together-${Date.now()}:` });
    try {
      await store.set('probe-0', { n: 0 }, null, 60);
      expect(await store.replicated?.('probe')).toBe(true);
      replica.process.kill('SIGSTOP');
      let answers: boolean[];
      const before = await waitCalls(masterPort);
      try {
        answers = await Promise.all(
          Array.from({ length: 12 }, async (_, i) => {
            await store.set(`probe-${i + 1}`, { n: i + 1 }, null, 60);
            return store.replicated!(`probe-${i + 1}`);
          }),
        );
      } finally {
        replica.process.kill('SIGCONT');
      }
      expect(answers).toEqual(Array.from({ length: 12 }, () => false));
      // Asked in turn, twelve WAITs of a second each would hold every command of the store for twelve seconds.
      expect((await waitCalls(masterPort)) - before).toBeLessThanOrEqual(2);
    } finally {
      for (let i = 0; i <= 12; i++) await store.delete(`probe-${i}`);
      await store.close();
    }
  }, 60_000);

  it('are not answered by a WAIT sent before they asked', async () => {
    const sent: Array<(replicas: number) => void> = [];
    const client = {
      wait: () => new Promise<number>((resolve) => sent.push(resolve)),
      info: () =>
        Promise.resolve(
          `# Replication\r\nrole:master\r\nconnected_slaves:1\r\nslave0:ip=127.0.0.1,port=${replicaPort},state=online,offset=1,lag=0\r\n`,
        ),
    } as unknown as RedisClient;
    const check = replicaCheck(client, target);
    const first = check('probe');
    const later = [check('probe'), check('probe'), check('probe')];
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent).toHaveLength(1);
    sent[0]!(1);
    expect(await first).toBe(true);
    await new Promise((resolve) => setImmediate(resolve));
    // One more WAIT, sent after the three asked, answers them all.
    expect(sent).toHaveLength(2);
    sent[1]!(0);
    expect(await Promise.all(later)).toEqual([false, false, false]);
    const again = check('probe');
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent).toHaveLength(3);
    sent[2]!(1);
    expect(await again).toBe(true);
  });
});

describe('a master whose replica left it', () => {
  it('is not taken as alone while the Sentinels count the replica up (a failover promoting it)', async () => {
    const store = new RedisStore({ url: target, keyPrefix: `alone-${Date.now()}:` });
    const promoted = new Redis({ port: replica.port });
    // The Sentinels count the replica up again (a test before stopped it for seconds).
    const sentinel = new Redis({ port: sentinelPorts[0] });
    const flags = async () => {
      const [fields] = (await sentinel.call('SENTINEL', 'REPLICAS', 'q')) as string[][];
      return fields![fields!.indexOf('flags') + 1];
    };
    await until('the Sentinels counting the replica up', async () => (await flags()) === 'slave', {
      timeoutMs: 10_000,
      everyMs: 100,
    });
    sentinel.disconnect();
    try {
      await store.set('probe', { n: 1 }, null, 60);
      expect(await store.replicated?.('probe')).toBe(true);
      // What a failover does first: the replica stops replicating; the old master sees none connected.
      await promoted.call('REPLICAOF', 'NO', 'ONE');
      await store.set('probe', { n: 2 }, 1, 60);
      const before = await waitCalls(masterPort);
      expect(await store.replicated?.('probe')).toBe(false);
      // Given the time for a replica to come (a WAIT), not answered at once: a caller asking again (a payment
      // waiting out a failover) is paced by it.
      expect((await waitCalls(masterPort)) - before).toBe(1);
    } finally {
      await promoted.call('REPLICAOF', '127.0.0.1', String(masterPort));
      promoted.disconnect();
      await until('the replica replicating again', () => store.replicated?.('probe'), { everyMs: 100 });
      await store.delete('probe');
      await store.close();
    }
  }, 60_000);
});

describe('a Sentinel connection', () => {
  it('is started again when ioredis ends it by itself, and stays ended when closed here', async () => {
    const client = connectRedis(target, { name: 'restart test' });
    await client.set('restart-test', '1', 'EX', 60);
    // What ioredis does when a reconnection overlaps its asking a Sentinel for the master: the client ends.
    const endedThenReady = new Promise<void>((resolve) =>
      client.once('end', () => client.once('ready', () => resolve())),
    );
    client.disconnect();
    await endedThenReady;
    expect(client.status).toBe('ready');
    expect(await client.get('restart-test')).toBe('1');
    // Closed here: the restart a self-ended connection gets (a timer its 'end' sets) is not started.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const ended = new Promise((resolve) => client.once('end', resolve));
      await closeRedis(client);
      await ended;
      vi.runAllTimers();
    } finally {
      vi.useRealTimers();
    }
    expect(client.status).toBe('end');
  }, 60_000);
});

describe('a master with two replicas', () => {
  it('holds a write only once both have it: the Sentinels may promote either', async () => {
    const second = await startRedis(secondReplicaPort, [
      ...SERVER_ARGS,
      '--replicaof',
      '127.0.0.1',
      String(masterPort),
    ]);
    const master = new Redis({ port: masterPort });
    const online = async () => ((await master.info('replication')).match(/state=online/g) ?? []).length;
    const store = new RedisStore({ url: target, keyPrefix: `two-${Date.now()}:` });
    try {
      await until('both replicas online', async () => (await online()) >= 2, { everyMs: 100 });
      expect(await online()).toBe(2);
      await store.set('probe', { n: 1 }, null, 60);
      expect(await store.replicated?.('probe')).toBe(true);
      second.process.kill('SIGSTOP');
      try {
        // The first replica takes it at once; the second, stopped, does not.
        await store.set('probe', { n: 2 }, 1, 60);
        expect(await store.replicated?.('probe')).toBe(false);
      } finally {
        second.process.kill('SIGCONT');
      }
      expect(await store.replicated?.('probe')).toBe(true);
    } finally {
      second.kill();
      await until('the second replica gone', async () => (await online()) <= 1, { everyMs: 100 });
      master.disconnect();
      await store.delete('probe');
      await store.close();
    }
  }, 60_000);
});
