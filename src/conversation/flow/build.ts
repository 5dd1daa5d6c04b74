/**
 * This build's place in the order of releases: what a stored flow's `build` is compared with, so a
 * release tells a conversation written by a later build (left alone) from one written by an earlier one
 * (continued, migrated or started again). A flow's shape (flows/shape.ts) says whether two machines differ, not
 * which came first; this says which came first.
 *
 * The time the build was made, in ms since the epoch: `npm run build` stamps `dist/.built` last (scripts/build.js),
 * and the compiled product reads that stamp beside it. Run from the sources (`npm run dev`, the tests), it is
 * the newest change to a file of `flows/` (nothing was built; the machines are what a release changes). Builds
 * are made in the order they are released; a rollback redeploys the earlier build as it was (rebuilding an
 * older commit makes it the newest).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The folder holding src/ and flows/: the repository's root, or dist/ for the compiled product. */
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** The newest modification time under `dir`, in ms (0 when there is nothing). */
function newestUnder(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestUnder(path) : statSync(path).mtimeMs);
  }
  return newest;
}

let known: number | undefined;

/** This build's place in the order of releases (ms since the epoch); read once. */
export function currentBuild(): number {
  if (known === undefined) {
    let stamped: number | undefined;
    try {
      stamped = Date.parse(readFileSync(join(ROOT, '.built'), 'utf8').trim());
    } catch {
      stamped = undefined;
    }
    known = stamped !== undefined && Number.isFinite(stamped) ? stamped : Math.floor(newestUnder(join(ROOT, 'flows')));
  }
  return known;
}
