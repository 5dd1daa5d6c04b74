/**
 * Reads a V8 .cpuprofile (node --cpu-prof) and prints where the time goes: self time by function and by
 * module (package or source folder), and inclusive time of chosen functions. `tsx bench/profile/analyze.ts
 * <file.cpuprofile> [top]`.
 */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** `node_modules/<pkg>` (scoped too) or the project folder of a source file. */
export function moduleOf(url: string): string {
  if (!url) return '(native/gc/idle)';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return nm[1]!;
  if (url.startsWith('node:')) return url;
  const m = /\/work\/[^/]+\/(?:[^/]+\/)?((?:src|adapters|flows|bench)\/[^/]+)/.exec(url);
  return m ? m[1]! : url.replace(/^file:\/\//, '');
}

/** Coarse groups of modules, for "where does a request's CPU go". */
export function categoryOf(mod: string): string {
  if (mod === 'xstate') return 'XState (flow steps, restore, persist)';
  if (/^(ioredis|redis-parser|standard-as-callback|cluster-key-slot|denque|bullmq|msgpackr)$/.test(mod))
    return 'Redis client (ioredis, bullmq)';
  if (
    /^(express|router|body-parser|qs|raw-body|type-is|iconv-lite|mime-types|mime-db|content-type|parseurl|finalhandler|send|etag|fresh|on-finished|debug|depd|statuses|http-errors|media-typer|negotiator|accepts|encodeurl|escape-html|cookie|vary|proxy-addr|forwarded|side-channel.*|call-bind.*|get-intrinsic|es-.*|object-inspect|has-.*|function-bind|math-intrinsics|dunder-proto|gopd|safe-buffer|setprototypeof|unpipe|ee-first|bytes|content-disposition|merge-descriptors|utils-merge|range-parser|serve-static|path-to-regexp|is-promise)$/.test(
      mod,
    )
  )
    return 'express and its parsers';
  if (/^node:(_http|net|internal\/(streams|stream_base|http|net)|stream|events|buffer|internal\/buffer)/.test(mod))
    return 'Node HTTP, sockets, streams, events';
  if (mod === '(garbage collector)') return 'garbage collection';
  if (mod === '(native/gc/idle)' || mod === '(program)') return 'native (socket writes, syscalls, VM)';
  if (mod === 'libphonenumber-js') return 'libphonenumber-js';
  if (mod === 'zod') return 'zod';
  if (mod === 'pino') return 'pino';
  if (mod.startsWith('src/conversation')) return 'our engine and stores (src/conversation)';
  if (mod.startsWith('adapters/')) return 'our channel adapter (adapters/)';
  if (mod.startsWith('flows') || mod.startsWith('bench/')) return 'flows and benchmark glue';
  if (mod.startsWith('src/')) return 'our other code (src/)';
  if (mod.startsWith('node:')) return 'other Node internals';
  return 'other packages';
}

export function analyze(profile: Profile, top = 25): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const fnSelf = new Map<string, number>();
  const modSelf = new Map<string, number>();
  const inclusive = new Map<string, number>();
  for (const [id, us] of self) {
    const n = byId.get(id)!;
    const name = n.callFrame.functionName || '(anonymous)';
    const where = `${name} ${moduleOf(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
    fnSelf.set(where, (fnSelf.get(where) ?? 0) + us);
    const mod = ['(idle)', '(program)', '(garbage collector)'].includes(name) ? name : moduleOf(n.callFrame.url);
    modSelf.set(mod, (modSelf.get(mod) ?? 0) + us);
    // Inclusive per module: every distinct module on the stack gets the sample's time once.
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const f = byId.get(cur)!.callFrame;
      const key = `${f.functionName || '(anonymous)'} ${moduleOf(f.url)}`;
      if (seen.has(key)) continue;
      seen.add(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + us);
    }
  }
  const pct = (us: number) => `${((100 * us) / total).toFixed(1).padStart(5)}%`;
  const busy = total - (modSelf.get('(idle)') ?? 0);
  const byCategory = new Map<string, number>();
  for (const [mod, us] of modSelf) {
    if (mod === '(idle)') continue;
    const category = categoryOf(mod);
    byCategory.set(category, (byCategory.get(category) ?? 0) + us);
  }
  const lines: string[] = [
    `total sampled ${(total / 1000).toFixed(0)} ms, busy ${(busy / 1000).toFixed(0)} ms`,
    '',
    'busy time by category:',
  ];
  for (const [k, v] of [...byCategory].sort((a, b) => b[1] - a[1]))
    lines.push(`${((100 * v) / busy).toFixed(1).padStart(5)}%  ${k}`);
  lines.push('', 'self time by module:');
  for (const [k, v] of [...modSelf].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`${pct(v)}  ${k}`);
  lines.push('', 'self time by function:');
  for (const [k, v] of [...fnSelf].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`${pct(v)}  ${k}`);
  lines.push('', 'inclusive time by function (project code):');
  for (const [k, v] of [...inclusive]
    .filter(([k]) => /(src|adapters|flows|bench)\//.test(k) || /xstate|ioredis|pino|libphonenumber|express|zod/.test(k))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top * 2))
    lines.push(`${pct(v)}  ${k}`);
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('analyze.ts')) {
  const file = process.argv[2];
  if (!file) throw new Error('usage: analyze.ts <file.cpuprofile> [top]');
  console.log(analyze(JSON.parse(readFileSync(file, 'utf8')) as Profile, Number(process.argv[3] ?? 25)));
}
