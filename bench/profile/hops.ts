/**
 * CPU of our USSD side without HTTP: `tsx bench/profile/hops.ts [sessions]` runs the benchmark's flow through
 * the real hop handler (Africa's Talking codec), engine and Redis store in this process, one session at a
 * time, and prints the CPU microseconds of each hop (dial, menu choice, phone, amount, PIN and payment),
 * all the work the hop causes (the PIN hop: the PIN check, the payment run and their writes). With the USSD
 * benchmark's CPU per request, it splits ours into HTTP and express versus adapter, engine and store.
 * With `--alloc` it also samples what the measured hops allocate (V8's sampling heap profiler, garbage
 * included) and prints kilobytes per hop by package: the allocations behind the garbage collector's share.
 * With `--cpu` it takes a CPU profile of the measured hops (V8's sampling profiler, every 100 µs) and prints
 * where their time goes by category, package and function (bench/profile/analyze.ts); the profile lands in
 * bench/results/profiles/ (not committed).
 * With `--funnel` it measures what counting the funnel costs instead: two hop handlers in this process, one
 * as the product has it (the engine tells the funnel every move, the handler notes each session's number for
 * end-of-session reports), one whose engine tells nobody, walked in alternating rounds of 100 sessions; it
 * prints each one's CPU per hop and their ratio.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { Redis } from 'ioredis';
import { codecs } from '../../adapters/ussd/codecs/index.js';
import { createSessionEnds } from '../../adapters/ussd/events.js';
import { createHopHandler } from '../../adapters/ussd/hop.js';
import { cleanUp, nextCaller, OURS_FINAL } from '../ussd/bench.js';
import { oursEngine } from '../ussd/ours.js';
import { analyze, moduleOf } from './analyze.js';

const PREFIX = 'bench:ussd:hops:';
const TEXTS = ['', '1', '1*0772123456', '1*0772123456*5000', '1*0772123456*5000*1234'];
const NAMES = ['dial', 'menu choice', 'phone', 'amount', 'PIN + payment'];
const args = process.argv.slice(2);
const sessions = Number(args.find((a) => /^\d+$/.test(a)) ?? 3000);
const alloc = args.includes('--alloc');
const cpuProfile = args.includes('--cpu');
const funnelAb = args.includes('--funnel');
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const africastalking = codecs.find((c) => c.name === 'africastalking')!;

const ours = oursEngine(redisUrl, PREFIX);
const { engine, logger } = ours;
// The product's hop handler notes each session's number (adapters/ussd/events.ts) for the funnel.
const handle = createHopHandler({
  engine,
  deadlineMs: 3000,
  logger,
  defaultCountry: 'UG',
  digestKey: 'bench-digest-key',
  serviceCode: '*384*123#',
  resumeSeconds: 120,
  sessionEnds: createSessionEnds({ engine, logger }),
})(africastalking);
/** The baseline of --funnel: an engine that tells nobody of its moves, a handler that notes nothing. */
const bare = funnelAb ? oursEngine(redisUrl, `${PREFIX}bare:`, { funnel: false }) : undefined;
const bareHandle =
  bare &&
  createHopHandler({
    engine: bare.engine,
    deadlineMs: 3000,
    logger,
    defaultCountry: 'UG',
    digestKey: 'bench-digest-key',
    serviceCode: '*384*123#',
    resumeSeconds: 120,
  })(africastalking);

/** One hop through a handler, with the fields of an express request and response it uses. */
function hop(fields: Record<string, string>, through = handle): Promise<string> {
  return new Promise((resolve) => {
    const res = { writeHead: () => res, end: (body: string) => resolve(body) };
    void through({ body: fields } as never, res as never);
  });
}

/**
 * `count` whole sessions one after another; the CPU of each hop, summed per hop. One at a time, so the CPU
 * between a hop's request and its answer is that hop's own (the PIN hop's answer waits for its run).
 */
async function walk(count: number, through = handle): Promise<number[]> {
  const cpu = TEXTS.map(() => 0);
  for (let i = 0; i < count; i++) {
    const fields = {
      sessionId: randomUUID(),
      serviceCode: '*384*123#',
      phoneNumber: nextCaller(),
      networkCode: '63902',
      text: '',
    };
    let last = '';
    for (const [n, text] of TEXTS.entries()) {
      const before = process.cpuUsage();
      last = await hop({ ...fields, text }, through);
      const used = process.cpuUsage(before);
      cpu[n]! += used.user + used.system;
    }
    if (last !== OURS_FINAL) throw new Error(`wrong final screen: ${last}`);
  }
  return cpu;
}

/** --funnel: both handlers in alternating rounds; the CPU per hop of each and the ratio. */
async function compareFunnel(count: number): Promise<void> {
  const ROUND = 100;
  const total = { funnel: 0, bare: 0 };
  const sum = (cpu: number[]) => cpu.reduce((a, b) => a + b, 0);
  for (let done = 0; done < count; done += ROUND) {
    const n = Math.min(ROUND, count - done);
    // Which goes first alternates too, so neither always runs on a warmer heap.
    const order = (done / ROUND) % 2 === 0 ? (['funnel', 'bare'] as const) : (['bare', 'funnel'] as const);
    for (const side of order) total[side] += sum(await walk(n, side === 'funnel' ? handle : bareHandle!));
  }
  const perHop = (cpu: number) => cpu / count / TEXTS.length;
  console.log(
    `CPU per hop with and without counting the funnel (${count} sessions each, alternating rounds of ${ROUND}):`,
  );
  console.log(`  with the funnel     ${Math.round(perHop(total.funnel))} µs`);
  console.log(`  without (baseline)  ${Math.round(perHop(total.bare))} µs`);
  console.log(`  ratio               ${(total.funnel / total.bare).toFixed(3)}`);
}

interface AllocationNode {
  callFrame: { url: string; functionName: string; lineNumber: number };
  selfSize: number;
  children: AllocationNode[];
}

interface Allocated {
  /** Bytes by package (moduleOf). */
  byModule: Map<string, number>;
  /** Bytes by function of our own code (src, adapters, flows): `name (module:line)`. */
  byFunction: Map<string, number>;
}

/**
 * Starts V8's sampling heap profiler, keeping objects the garbage collector has freed since; the returned
 * function stops it and gives bytes allocated by package (moduleOf) and by function of ours. A builtin's
 * allocation (a Set, a string) counts for the nearest caller with a source file.
 */
async function startAllocationSampling(): Promise<() => Promise<Allocated>> {
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
    const byModule = new Map<string, number>();
    const byFunction = new Map<string, number>();
    const add = (map: Map<string, number>, key: string, bytes: number) => map.set(key, (map.get(key) ?? 0) + bytes);
    const visit = (node: AllocationNode, owner: string, ownFunction: string | undefined) => {
      const { url, functionName, lineNumber } = node.callFrame;
      const mod = url ? moduleOf(url) : owner;
      const own = url
        ? /^(src|adapters|flows)\//.test(mod)
          ? `${functionName || '(anonymous)'} (${url.replace(/^.*\/(?=(src|adapters|flows)\/)/, '')}:${lineNumber + 1})`
          : undefined
        : ownFunction;
      add(byModule, mod, node.selfSize);
      if (own) add(byFunction, own, node.selfSize);
      for (const child of node.children) visit(child, mod, own);
    };
    visit(profile.head as AllocationNode, '(VM)', undefined);
    return { byModule, byFunction };
  };
}

/** Starts V8's CPU profiler; the returned function stops it, writes the profile and gives its analysis. */
async function startCpuProfile(): Promise<() => Promise<string>> {
  const inspector = new Session();
  inspector.connect();
  await inspector.post('Profiler.enable');
  await inspector.post('Profiler.setSamplingInterval', { interval: 100 });
  await inspector.post('Profiler.start');
  return async () => {
    const { profile } = await inspector.post('Profiler.stop');
    inspector.disconnect();
    const dir = 'bench/results/profiles';
    mkdirSync(dir, { recursive: true });
    const file = `${dir}/hops-${Date.now()}.cpuprofile`;
    writeFileSync(file, JSON.stringify(profile));
    return `${file}\n${analyze(profile as never, 30)}`;
  };
}

const redis = new Redis(redisUrl);
try {
  await walk(1000); // warm-up
  if (bareHandle) await walk(1000, bareHandle);
  if (funnelAb) {
    await compareFunnel(sessions);
  } else {
    const sampler = alloc ? await startAllocationSampling() : undefined;
    const profiler = cpuProfile ? await startCpuProfile() : undefined;
    const cpu = await walk(sessions);
    const profiled = await profiler?.();
    const allocated = await sampler?.();
    console.log(`CPU per hop, adapter + engine + Redis store, no HTTP (${sessions} sessions, one at a time):`);
    for (const [n, name] of NAMES.entries()) console.log(`  ${name.padEnd(14)} ${Math.round(cpu[n]! / sessions)} µs`);
    console.log(`  mean of the 5  ${Math.round(cpu.reduce((a, b) => a + b, 0) / sessions / TEXTS.length)} µs`);
    if (profiled) console.log(`CPU profile of these hops (profiler on, so CPU above is inflated): ${profiled}`);
    if (allocated) {
      const hops = sessions * TEXTS.length;
      const total = [...allocated.byModule.values()].reduce((a, b) => a + b, 0);
      const top = (bytes: Map<string, number>) => [...bytes].sort((a, b) => b[1] - a[1]).slice(0, 16);
      console.log(
        `Allocated per hop (profiler on, so CPU above is inflated): ${(total / hops / 1024).toFixed(1)} KB, by package:`,
      );
      for (const [mod, bytes] of top(allocated.byModule))
        console.log(`  ${(bytes / hops / 1024).toFixed(1).padStart(5)} KB  ${mod}`);
      console.log('Our own code by function (what it and the builtins it calls allocate):');
      for (const [fn, bytes] of top(allocated.byFunction))
        console.log(`  ${(bytes / hops / 1024).toFixed(1).padStart(5)} KB  ${fn}`);
    }
  }
} finally {
  for (const side of [ours, bare]) {
    if (!side) continue;
    await side.engine.drain();
    await side.store.close();
    await side.funnel?.close();
  }
  await cleanUp(redis, PREFIX);
  await cleanUp(redis, ours.funnelPrefix);
  redis.disconnect();
}
