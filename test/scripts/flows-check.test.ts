/**
 * `npm run flows:check -- --against <ref>` (scripts/flows-check.ts) as a process: against this commit it
 * passes; in a clone whose pay flow renames `awaitingAmount`, it fails naming that state and the shape to
 * migrate from, and passes once flows/migrations/ moves it.
 */
import { execFile, execFileSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SCRIPT = path.join(ROOT, 'scripts/flows-check.ts');
const temp = mkdtempSync(path.join(tmpdir(), 'flows-check-test-'));

afterAll(() => rmSync(temp, { recursive: true, force: true }));

/** The script run in `cwd` (the repository around it is "today"): its exit code and what it printed. */
function flowsCheck(cwd: string, ref: string): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', SCRIPT, '--against', ref],
      { cwd, encoding: 'utf8' },
      (error, out, err) => resolve({ code: error ? Number(error.code ?? 1) : 0, out, err }),
    );
  });
}

describe('npm run flows:check', () => {
  it('passes against this commit, with one line', async () => {
    const { code, out } = await flowsCheck(ROOT, 'HEAD');
    expect(code).toBe(0);
    expect(out).toMatch(/^flows:check: every state of \d+ flows at HEAD has a path here \(\d+ states: /m);
  }, 60_000);

  it('names a state renamed without a migration, and passes once one moves it', async () => {
    const clone = path.join(temp, 'repo');
    execFileSync('git', ['clone', '--quiet', '--shared', ROOT, clone]);
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(clone, 'node_modules'), 'dir');
    const pay = path.join(clone, 'flows/pay.machine.ts');
    writeFileSync(pay, readFileSync(pay, 'utf8').replace(/\bawaitingAmount\b/g, 'enteringAmount'));

    const stranded = await flowsCheck(clone, 'HEAD');
    expect(stranded.code).toBe(1);
    const line = stranded.err.split('\n').find((l) => l.startsWith('flows:check: pay state awaitingAmount '));
    expect(line, stranded.err).toMatch(/has no path: no such state here and no migration/);
    expect(stranded.err).toMatch(/^flows:check: 1 of \d+ states at HEAD have no path here$/m);
    const shape = /\(shape (\S+) at HEAD\)/.exec(line!)![1]!;
    expect(shape).not.toBe('unwritten');

    // The release declares the move from the shape HEAD stored.
    appendFileSync(
      path.join(clone, 'flows/migrations/index.ts'),
      `\nmigrations.pay = { ...migrations.pay, ${JSON.stringify(shape)}: { awaitingAmount: 'enteringAmount' } };\n`,
    );
    const migrated = await flowsCheck(clone, 'HEAD');
    expect(migrated.err).toBe('');
    expect(migrated.code).toBe(0);
    expect(migrated.out).toMatch(/has a path here \(\d+ states: \d+ same id, 1 migrated\)/);
  }, 120_000);

  it('says a ref that is not a commit, with exit 2', async () => {
    const { code, err } = await flowsCheck(ROOT, 'no-such-ref-0f3a');
    expect(code).toBe(2);
    expect(err).toContain('no-such-ref-0f3a is not a commit of this repository');
  }, 60_000);
});
