/**
 * Where our USSD hop's CPU goes, layer by layer: `tsx bench/profile/layers.ts [seconds] [rounds]` drives, in
 * interleaved rounds like the USSD benchmark (50 connections, whole sessions), express with our body reader
 * answering from the text alone (`http`), the same route served on Node's own objects in front of express as
 * ours is (`node`, src/http/direct-routes.ts), express after one Redis GET and one SET (`http-redis`), the
 * floor (express's own urlencoded parser, GET and SET), the peer, and ours; it prints each one's median
 * CPU per request and rate, and what each layer adds. Every server's final screens are checked as in the
 * benchmark. What `node` costs no engine served as ours goes below; `http-redis` minus `http` is what two
 * Redis commands cost a hop.
 */
import { Redis } from 'ioredis';
import { stop } from '../child.js';
import { cleanUp, drive, KEY_PREFIX, startServer, type ServerKind } from '../ussd/bench.js';

const seconds = Number(process.argv[2] ?? 5);
const rounds = Number(process.argv[3] ?? 3);
const kinds: ServerKind[] = ['http', 'node', 'http-redis', 'floor', 'peer', 'ours'];
const pathOf = (kind: ServerKind) => (kind === 'ours' ? '/ussd/africastalking' : '/ussd');
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const servers = await Promise.all(kinds.map((kind) => startServer(kind)));
try {
  await cleanUp(redis, KEY_PREFIX);
  for (const [i, kind] of kinds.entries()) await drive(kind, servers[i]!.url, pathOf(kind), 2);
  const cpu = new Map<ServerKind, number[]>(kinds.map((k) => [k, []]));
  const rps = new Map<ServerKind, number[]>(kinds.map((k) => [k, []]));
  for (let round = 0; round < rounds; round++) {
    for (const [i, kind] of kinds.entries()) {
      const r = await drive(kind, servers[i]!.url, pathOf(kind), seconds);
      if (r.wrongFinals > 0 || r.errors > 0)
        throw new Error(`${kind}: ${r.wrongFinals} wrong final screens, ${r.errors} errors (${r.firstWrong ?? ''})`);
      cpu.get(kind)!.push(r.cpuUsPerReq);
      rps.get(kind)!.push(r.rps);
    }
  }
  const at = (kind: ServerKind) => median(cpu.get(kind)!);
  console.log(`CPU per request, median of ${rounds} interleaved rounds of ${seconds} s (50 connections):`);
  for (const kind of kinds)
    console.log(
      `  ${kind.padEnd(11)} ${String(at(kind)).padStart(4)} µs  ${String(Math.round(median(rps.get(kind)!))).padStart(5)} req/s`,
    );
  console.log('What each layer adds:');
  console.log(`  express over Node's own objects (http - node) ${at('http') - at('node')} µs`);
  console.log(`  two Redis commands (http-redis - http)       ${at('http-redis') - at('http')} µs`);
  console.log(`  the peer's menu and session over http        ${at('peer') - at('http')} µs`);
  console.log(`  our engine, stores and adapter over node     ${at('ours') - at('node')} µs`);
} finally {
  await Promise.all(servers.map(({ child }) => stop(child)));
  await cleanUp(redis, KEY_PREFIX);
  redis.disconnect();
}
