/**
 * CPU of our USSD side without HTTP: `tsx bench/profile/hops.ts [sessions]` runs the benchmark's flow through
 * the real hop handler (Africa's Talking codec), engine and Redis store in this process, one session at a
 * time, and prints the CPU microseconds of each hop (dial, menu choice, phone, amount, PIN and payment),
 * all the work the hop causes (the PIN hop: the PIN check, the payment run and their writes). With the USSD
 * benchmark's CPU per request, it splits ours into HTTP and express versus adapter, engine and store.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { codecs } from '../../adapters/ussd/codecs/index.js';
import { createHopHandler } from '../../adapters/ussd/hop.js';
import { cleanUp, nextCaller, OURS_FINAL } from '../ussd/bench.js';
import { oursEngine } from '../ussd/ours.js';

const PREFIX = 'bench:ussd:hops:';
const TEXTS = ['', '1', '1*0772123456', '1*0772123456*5000', '1*0772123456*5000*1234'];
const NAMES = ['dial', 'menu choice', 'phone', 'amount', 'PIN + payment'];
const sessions = Number(process.argv[2] ?? 3000);

const { engine, store, logger } = oursEngine(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', PREFIX);
const handle = createHopHandler({ engine, deadlineMs: 3000, logger, defaultCountry: 'UG' })(codecs.find((c) => c.name === 'africastalking')!);

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

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
try {
  await walk(1000); // warm-up
  const cpu = await walk(sessions);
  console.log(`CPU per hop, adapter + engine + Redis store, no HTTP (${sessions} sessions, one at a time):`);
  for (const [n, name] of NAMES.entries()) console.log(`  ${name.padEnd(14)} ${Math.round(cpu[n]! / sessions)} µs`);
  console.log(`  mean of the 5  ${Math.round(cpu.reduce((a, b) => a + b, 0) / sessions / TEXTS.length)} µs`);
} finally {
  await engine.drain();
  await store.close();
  await cleanUp(redis, PREFIX);
  redis.disconnect();
}
