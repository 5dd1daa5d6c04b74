/**
 * Rewrites the "## Benchmarks" section at the end of README.md from bench/results/table.md:
 * `npx tsx bench/readme.ts`. Only that section (from its heading to the end of the file) is replaced; the
 * words around the table are kept in bench/README-section.md.
 */
import { readFileSync, writeFileSync } from 'node:fs';

const HEADING = '## Benchmarks';
const readme = readFileSync('README.md', 'utf8');
const at = readme.indexOf(`\n${HEADING}\n`);
const before = at >= 0 ? readme.slice(0, at + 1) : `${readme.replace(/\n*$/, '')}\n\n`;
const [table = '', note = ''] = readFileSync('bench/results/table.md', 'utf8').trim().split(/\n\s*\n/);
const section = readFileSync('bench/README-section.md', 'utf8').replace('{{TABLE}}', table.trim()).replace('{{RUN}}', note.trim()).trim();
writeFileSync('README.md', `${before}${section}\n`);
console.log(`README.md: ${HEADING} ${at >= 0 ? 'replaced' : 'added'}`);
