/**
 * CPU of our USSD side without HTTP: `tsx bench/profile/hops.ts [sessions]` runs the benchmark's flow through
 * the real hop handler (Africa's Talking codec), engine and Redis store in this process, one session at a
 * time, and prints the CPU microseconds of each hop (dial, menu choice, phone, amount, PIN and payment),
 * all the work the hop causes (the PIN hop: the PIN check, the payment run and their writes). With the USSD
 * benchmark's CPU per request, it splits ours into HTTP and express versus adapter, engine and store.
 * With `--alloc` it also samples what the measured hops allocate (V8's sampling heap profiler, garbage
 * included) and prints kilobytes per hop by package: the allocations behind the garbage collector's share.
 */
import { randomUUID } from 'node:crypto';
import { Session } from 'node:inspector/promises';
import { Redis } from 'ioredis';
import { codecs } from '../../adapters/ussd/codecs/index.js';
import { createHopHandler } from '../../adapters/ussd/hop.js';
import { cleanUp, nextCaller, OURS_FINAL } from '../ussd/bench.js';
import { oursEngine } from '../ussd/ours.js';
import { moduleOf } from './analyze.js';

const PREFIX = 'bench:ussd:hops:';
const TEXTS = ['', '1', '1*0772123456', '1*0772123456*5000', '1*0772123456*5000*1234'];
const NAMES = ['dial', 'menu choice', 'phone', 'amount', 'PIN + payment'];
const args = process.argv.slice(2);
const sessions = Number(args.find((a) => /^\d+$/.test(a)) ?? 3000);
const alloc = args.includes('--alloc');

const { engine, store, logger } = oursEngine(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', PREFIX);
const handle = createHopHandler({ engine, deadlineMs: 3000, logger, defaultCountry: 'UG', digestKey: 'bench-digest-key' })(codecs.find((c) => c.name === 'africastalking')!);

/** One hop through the handler, with the fields of an express request and response it uses. */
function hop(fields: Record<string, string>): Promise<string> {
  return new Promise((resolve) => {
    const res = { writeHead: () => res, end: (body: string) => resolve(body) };
    void handle({ body: fields } as never, res as never);
  });
}

/**
 * `count` whole sessions one after another; the CPU of each hop, summed per hop. One at a time, so the CPU
 * between a hop's request and its answer is that hop's own (the PIN hop's answer waits for its run).
 */
async function walk(count: number): Promise<number[]> {
  const cpu = TEXTS.map(() => 0);
  for (let i = 0; i < count; i++) {
    const fields = { sessionId: randomUUID(), serviceCode: '*384*123#', phoneNumber: nextCaller(), networkCode: '63902', text: '' };
    let last = '';
    for (const [n, text] of TEXTS.entries()) {
      const before = process.cpuUsage();
      last = await hop({ ...fields, text });
      const used = process.cpuUsage(before);
      cpu[n]! += used.user + used.system;
    }
    if (last !== OURS_FINAL) throw new Error(`wrong final screen: ${last}`);
  }
  return cpu;
}

interface AllocationNode {
  callFrame: { url: string };
  selfSize: number;
  children: AllocationNode[];
}

/**
 * Starts V8's sampling heap profiler, keeping objects the garbage collector has freed since; the returned
 * function stops it and gives bytes allocated by package (moduleOf). A builtin's allocation (a Set, a
 * string) counts for the nearest caller with a source file.
 */
async function startAllocationSampling(): Promise<() => Promise<Map<string, number>>> {
  const inspector = new Session();
  inspector.connect();
  await inspector.post('HeapProfiler.enable');
  await inspector.post('HeapProfiler.startSampling', {
    samplingInterval: 1024,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  return async () => {
    const { profile } = await inspector.post('HeapProfiler.stopSampling');
    inspector.disconnect();
    const bytes = new Map<string, number>();
    const visit = (node: AllocationNode, owner: string) => {
      const mod = node.callFrame.url ? moduleOf(node.callFrame.url) : owner;
      bytes.set(mod, (bytes.get(mod) ?? 0) + node.selfSize);
      for (const child of node.children) visit(child, mod);
    };
    visit(profile.head as AllocationNode, '(VM)');
    return bytes;
  };
}

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
try {
  await walk(1000); // warm-up
  const sampler = alloc ? await startAllocationSampling() : undefined;
  const cpu = await walk(sessions);
  const allocated = await sampler?.();
  console.log(`CPU per hop, adapter + engine + Redis store, no HTTP (${sessions} sessions, one at a time):`);
  for (const [n, name] of NAMES.entries()) console.log(`  ${name.padEnd(14)} ${Math.round(cpu[n]! / sessions)} µs`);
  console.log(`  mean of the 5  ${Math.round(cpu.reduce((a, b) => a + b, 0) / sessions / TEXTS.length)} µs`);
  if (allocated) {
    const hops = sessions * TEXTS.length;
    const total = [...allocated.values()].reduce((a, b) => a + b, 0);
    console.log(`Allocated per hop (profiler on, so CPU above is inflated): ${(total / hops / 1024).toFixed(1)} KB, by package:`);
    for (const [mod, bytes] of [...allocated].sort((a, b) => b[1] - a[1]).slice(0, 12)) {
      console.log(`  ${(bytes / hops / 1024).toFixed(1).padStart(5)} KB  ${mod}`);
    }
  }
} finally {
  await engine.drain();
  await store.close();
  await cleanUp(redis, PREFIX);
  redis.disconnect();
}
