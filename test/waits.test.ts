/**
 * Keeps fixed sleeps out of test/: a test waits for a condition (until.ts), never for a duration, and empties
 * no database another file uses. A timer that is no wait (a bound a process's exit or an answer ends, a fault
 * or a person's pace in the chaos run, a lease whose length is the thing tested) says why on its line or the
 * line above: `timer-ok: <why>`.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = new URL('..', import.meta.url).pathname;
const TEST = join(ROOT, 'test');

const files = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
  });

/** The one wait (until.ts keeps Node's own timer) and this file, which names what it looks for. */
const EXEMPT = new Set(['test/until.ts', 'test/waits.test.ts']);
const sources = files(TEST)
  .map((path) => ({ path: relative(ROOT, path), lines: readFileSync(path, 'utf8').split('\n') }))
  .filter(({ path }) => !EXEMPT.has(path));

/** A timer or a sleep: Node's timers (not a method such as `req.setTimeout`), a sleep helper, Playwright's. */
const TIMER = /(?<![\w.])(setTimeout|setInterval|sleep|delay|pause|waitForTimeout)\(|timers\/promises/;
const REASON = /timer-ok: \S.{9,}/;

describe('test/', () => {
  it('waits for conditions, not durations: every timer left says why it is no wait', () => {
    const unexplained = sources.flatMap(({ path, lines }) =>
      lines.flatMap((line, i) =>
        TIMER.test(line) && !REASON.test(line) && !REASON.test(lines[i - 1] ?? '')
          ? [`${path}:${i + 1}: ${line.trim()}`]
          : [],
      ),
    );
    expect(unexplained, 'wait with until() (test/until.ts), or say `timer-ok: <why>`').toEqual([]);
  });

  it('empties a whole Redis only on a server of its own (startOwnRedis), never the shared one', () => {
    const flushing = sources.filter(({ lines }) => lines.some((line) => /\.(flushall|flushdb)\(/i.test(line)));
    expect(flushing.length).toBeGreaterThan(0); // the check still sees the files that do
    const shared = flushing.filter(({ lines }) => !lines.some((line) => /\bstartOwnRedis\(/.test(line)));
    expect(shared.map(({ path }) => path)).toEqual([]);
  });

  it('the check catches a sleep and accepts a reason', () => {
    expect(TIMER.test('await new Promise((r) => setTimeout(r, 100));')).toBe(true);
    expect(TIMER.test("import { setTimeout } from 'node:timers/promises';")).toBe(true);
    expect(TIMER.test('await sleep(250);')).toBe(true);
    expect(TIMER.test('req.setTimeout(ANSWER_TIMEOUT_MS, () => req.destroy());')).toBe(false);
    expect(TIMER.test('await until(what, probe);')).toBe(false);
    expect(REASON.test('// timer-ok: a bound, not a wait: the exit ends it')).toBe(true);
    expect(REASON.test('// timer-ok:')).toBe(false);
  });
});
