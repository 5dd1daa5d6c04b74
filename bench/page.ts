/**
 * Writes docs/benchmarks.md from bench/results/table.md (the latest full run's table and its run line, as
 * `npm run bench` leaves them) and the words around them in bench/benchmarks.template.md:
 * `npx tsx bench/page.ts`; the scale and notifications-under-load tables from
 * bench/results/scale.md, notify-load.md and journal.md. Dated runs and what each change measured go to bench/HISTORY.md by hand.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

const PAGE = 'docs/benchmarks.md';
const [table = '', note = ''] = readFileSync('bench/results/table.md', 'utf8')
  .trim()
  .split(/\n\s*\n/);
const scale = existsSync('bench/results/scale.md')
  ? readFileSync('bench/results/scale.md', 'utf8').trim()
  : '(not run yet: `npm run bench -- scale`)';
const notifyLoad = existsSync('bench/results/notify-load.md')
  ? readFileSync('bench/results/notify-load.md', 'utf8').trim()
  : '(not run yet: `npm run bench -- notify-load`)';
const journal = existsSync('bench/results/journal.md')
  ? readFileSync('bench/results/journal.md', 'utf8').trim()
  : '(not run yet: `npm run bench -- journal`)';
const page = readFileSync('bench/benchmarks.template.md', 'utf8')
  .replace('{{TABLE}}', table.trim())
  .replace('{{SCALE}}', scale)
  .replace('{{NOTIFY_LOAD}}', notifyLoad)
  .replace('{{JOURNAL}}', journal)
  .replace('{{RUN}}', note.trim())
  .trim();
writeFileSync(PAGE, `${page}\n`);
console.log(`${PAGE} written`);
