/**
 * `npm run diagrams`: writes the flows' Mermaid diagrams (diagrams.ts) to docs/flows/<flow>.md and
 * docs/flows/README.md, and says which files changed. Run it after changing a machine, and commit the result.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generatedFiles } from './diagrams.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const read = (path: string): string | undefined => {
  try {
    return readFileSync(join(root, path), 'utf8');
  } catch {
    return undefined;
  }
};

const changed: string[] = [];
for (const [path, content] of generatedFiles()) {
  if (read(path) === content) continue;
  mkdirSync(dirname(join(root, path)), { recursive: true });
  writeFileSync(join(root, path), content);
  changed.push(path);
}
console.log(changed.length === 0 ? 'diagrams: every file is up to date' : `diagrams: wrote ${changed.join(', ')}`);
