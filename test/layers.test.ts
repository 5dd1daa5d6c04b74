/**
 * The layers, as ARCHITECTURE.md draws them: `adapters -> conversation -> flows`, and the store (src/store)
 * below them all. Every import of the product is read with the TypeScript compiler's own pre-processor
 * (static, type-only, re-exports and dynamic imports alike) and followed through the folders of no layer
 * (src/log.ts, src/redis/, src/notifications/…), so a store file reaching the engine by way of another folder
 * counts as importing it.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/** Top to bottom: a layer may import those below it, never one above. */
const LAYERS = [
  { name: 'adapters', folder: 'adapters/' },
  { name: 'conversation', folder: 'src/conversation/' },
  { name: 'flows', folder: 'flows/' },
  { name: 'store', folder: 'src/store/' },
] as const;
type Layer = (typeof LAYERS)[number]['name'];

/** Repo-relative paths (with `/`) of each product file and the product files it imports. */
type Graph = Map<string, string[]>;

/** One layer reaching another: the first chain of files found that does it. */
interface Crossing {
  from: Layer;
  to: Layer;
  chain: string[];
}

const rank = (layer: Layer): number => LAYERS.findIndex((l) => l.name === layer);
const layerOf = (path: string): Layer | undefined => LAYERS.find((l) => path.startsWith(l.folder))?.name;

const sourcesUnder = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourcesUnder(path);
    return /\.(ts|js)$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });

/** The file a relative specifier names (`./x.js` is `x.ts` in the sources), or undefined outside the product. */
function resolveSpecifier(from: string, spec: string): string | undefined {
  const base = normalize(join(dirname(from), spec));
  const stem = base.replace(/\.(js|ts)$/, '');
  for (const candidate of [`${stem}.ts`, `${stem}.js`, join(base, 'index.ts')]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return undefined;
}

/** Every import of the product's files (src, adapters, flows) among themselves. */
function productImports(root: string): Graph {
  const graph: Graph = new Map();
  const path = (file: string): string => relative(root, file).split(sep).join('/');
  for (const file of ['src', 'adapters', 'flows'].flatMap((dir) => sourcesUnder(join(root, dir)))) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const targets = importedFiles
      .map((i) => i.fileName)
      .filter((spec) => spec.startsWith('.'))
      .map((spec) => resolveSpecifier(file, spec))
      .filter((target): target is string => target !== undefined)
      .map(path);
    graph.set(path(file), [...new Set(targets)]);
  }
  return graph;
}

/** Each pair of layers one reaches the other, directly or through files of no layer. */
function crossings(graph: Graph): Crossing[] {
  const found = new Map<string, Crossing>();
  for (const start of [...graph.keys()].sort()) {
    const from = layerOf(start);
    if (!from) continue;
    const seen = new Set([start]);
    const walk = [[start]];
    while (walk.length > 0) {
      const chain = walk.shift() ?? [];
      for (const next of graph.get(chain[chain.length - 1] ?? '') ?? []) {
        if (seen.has(next)) continue;
        seen.add(next);
        const to = layerOf(next);
        if (to === undefined) walk.push([...chain, next]);
        else if (to !== from && !found.has(`${from} ${to}`))
          found.set(`${from} ${to}`, { from, to, chain: [...chain, next] });
      }
    }
  }
  return [...found.values()];
}

/** The crossings that go up: against the arrows. */
const upward = (all: Crossing[]): string[] =>
  all.filter((c) => rank(c.to) < rank(c.from)).map((c) => `${c.from} -> ${c.to}: ${c.chain.join(' -> ')}`);

/** Circles among the layers (each once, from its first layer in LAYERS' order), as `a -> b -> a`. */
function circles(all: Crossing[]): string[] {
  const out = new Set<string>();
  const visit = (path: Layer[]): void => {
    const last = path[path.length - 1] as Layer;
    for (const c of all.filter((x) => x.from === last)) {
      if (c.to === path[0]) out.add([...path, c.to].join(' -> '));
      else if (!path.includes(c.to) && rank(c.to) > rank(path[0] as Layer)) visit([...path, c.to]);
    }
  };
  for (const { name } of LAYERS) visit([name]);
  return [...out].sort();
}

const root = fileURLToPath(new URL('..', import.meta.url));

describe('the layers: adapters -> conversation -> flows, the store below them all', () => {
  const graph = productImports(root);
  const real = crossings(graph);

  it('reads the imports that draw the arrows', () => {
    const pairs = real.map((c) => `${c.from} -> ${c.to}`);
    expect(pairs).toEqual(
      expect.arrayContaining(['adapters -> conversation', 'conversation -> flows', 'conversation -> store']),
    );
    expect(graph.get('src/store/keys.ts')).toContain('src/store/chat-address.ts');
  });

  it('has no import circle across the layers', () => {
    expect(circles(real)).toEqual([]);
  });

  it('has no import against the arrows, directly or through another folder', () => {
    expect(upward(real)).toEqual([]);
  });

  it('has no store file importing the engine, a flow or an adapter', () => {
    expect(real.filter((c) => c.from === 'store').map((c) => c.chain.join(' -> '))).toEqual([]);
  });

  it('finds a circle, an import up, and a store file reaching the engine through another folder', () => {
    const planted: Graph = new Map([
      ['flows/types.ts', ['src/conversation/types.ts']],
      ['src/conversation/types.ts', ['flows/types.ts']],
      ['src/store/keys.ts', ['src/log.ts']],
      ['src/log.ts', ['src/conversation/engine/turn.ts']],
      ['src/conversation/engine/turn.ts', ['src/store/keys.ts']],
    ]);
    const found = crossings(planted);
    expect(circles(found)).toEqual(['conversation -> flows -> conversation', 'conversation -> store -> conversation']);
    expect(upward(found)).toEqual([
      'flows -> conversation: flows/types.ts -> src/conversation/types.ts',
      'store -> conversation: src/store/keys.ts -> src/log.ts -> src/conversation/engine/turn.ts',
    ]);
  });
});
