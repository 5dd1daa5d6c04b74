/**
 * An in-process A/B of the USSD hop's CPU: `tsx bench/profile/hops-ab.ts <base checkout> [rounds] [sessions]`
 * loads the benchmark's engine and the product's hop handler (as bench/profile/hops.ts runs them: Africa's
 * Talking codec, engine, Redis store, no HTTP) from the base checkout and from this one, each on keys of its
 * own, and walks whole sessions one at a time through each in alternating rounds (who goes first alternating
 * too), so both sides see the same machine load. Prints each side's CPU a hop, hop by hop, and the ratio of
 * this checkout's to the base's, with the load average before and after. The base checkout needs its
 * node_modules (a symlink to this one's will do).
 */
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';

const [baseArg, roundsArg, sessionsArg] = process.argv.slice(2);
if (!baseArg) throw new Error('usage: hops-ab.ts <base checkout> [rounds] [sessions a round]');
const rounds = Number(roundsArg ?? 20);
const perRound = Number(sessionsArg ?? 100);
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const TEXTS = ['', '1', '1*0772123456', '1*0772123456*5000', '1*0772123456*5000*1234'];
const NAMES = ['dial', 'menu choice', 'phone', 'amount', 'PIN + payment'];
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

type Handle = (req: never, res: never) => Promise<void>;
interface Side {
  name: string;
  handle: Handle;
  final: string;
  nextCaller: () => string;
  close: () => Promise<void>;
  cpu: number[];
}

/** The engine and hop handler of the checkout in `dir`, on keys under `prefix`. */
async function sideOf(name: string, dir: string, prefix: string): Promise<Side> {
  const at = (file: string) => import(path.join(dir, file));
  const { codecs } = await at('adapters/ussd/codecs/index.ts');
  const { createSessionEnds } = await at('adapters/ussd/events.ts');
  const { createHopHandler } = await at('adapters/ussd/hop.ts');
  const { nextCaller, OURS_FINAL, cleanUp } = await at('bench/ussd/bench.ts');
  const { oursEngine } = await at('bench/ussd/ours.ts');
  const ours = oursEngine(redisUrl, prefix);
  const { engine, logger } = ours;
  const handle = createHopHandler({
    engine,
    deadlineMs: 3000,
    logger,
    defaultCountry: 'UG',
    digestKey: 'bench-digest-key',
    serviceCode: '*384*123#',
    resumeSeconds: 120,
    sessionEnds: createSessionEnds({ engine, logger }),
  })(codecs.find((c: { name: string }) => c.name === 'africastalking'));
  return {
    name,
    handle,
    final: OURS_FINAL,
    nextCaller,
    cpu: TEXTS.map(() => 0),
    close: async () => {
      await ours.engine.drain();
      await ours.store.close();
      await ours.funnel?.close();
      const redis = new Redis(redisUrl);
      await cleanUp(redis, prefix);
      await cleanUp(redis, ours.funnelPrefix);
      redis.disconnect();
    },
  };
}

function hop(side: Side, fields: Record<string, string>): Promise<string> {
  return new Promise((resolve) => {
    const res = { writeHead: () => res, end: (body: string) => resolve(body) };
    void side.handle({ body: fields } as never, res as never);
  });
}

/** `count` whole sessions one after another, each hop's CPU added to the side's. */
async function walk(side: Side, count: number, cpu = side.cpu): Promise<void> {
  for (let i = 0; i < count; i++) {
    const fields = {
      sessionId: randomUUID(),
      serviceCode: '*384*123#',
      phoneNumber: side.nextCaller(),
      networkCode: '63902',
      text: '',
    };
    let last = '';
    for (const [n, text] of TEXTS.entries()) {
      const before = process.cpuUsage();
      last = await hop(side, { ...fields, text });
      const used = process.cpuUsage(before);
      cpu[n]! += used.user + used.system;
    }
    if (last !== side.final) throw new Error(`${side.name}: wrong final screen: ${last}`);
  }
}

const run = randomUUID().slice(0, 8);
const sides = [
  await sideOf('base', path.resolve(baseArg), `bench:ussd:ab:${run}:base:`),
  await sideOf('this', process.cwd(), `bench:ussd:ab:${run}:this:`),
];
console.log(`load before: ${load()}`);
try {
  for (const side of sides)
    await walk(
      side,
      500,
      TEXTS.map(() => 0),
    ); // warm-up, not counted
  for (let round = 0; round < rounds; round++)
    for (const side of round % 2 === 0 ? sides : [...sides].reverse()) await walk(side, perRound);
  const sessions = rounds * perRound;
  const perHop = (side: Side) => side.cpu.reduce((a, b) => a + b, 0) / sessions / TEXTS.length;
  console.log(`CPU per hop, ${rounds} alternating rounds of ${perRound} sessions a side:`);
  console.log(`  ${'hop'.padEnd(14)} ${sides.map((s) => s.name.padStart(7)).join(' ')}   ratio`);
  for (const [n, name] of NAMES.entries()) {
    const [a, b] = sides.map((s) => s.cpu[n]! / sessions);
    console.log(
      `  ${name.padEnd(14)} ${[a!, b!].map((v) => `${Math.round(v)} µs`.padStart(7)).join(' ')}   ${(b! / a!).toFixed(3)}`,
    );
  }
  const [a, b] = sides.map(perHop);
  console.log(
    `  ${'mean of the 5'.padEnd(14)} ${[a!, b!].map((v) => `${Math.round(v)} µs`.padStart(7)).join(' ')}   ${(b! / a!).toFixed(3)}`,
  );
  console.log(`load after: ${load()}`);
} finally {
  for (const side of sides) await side.close();
}
