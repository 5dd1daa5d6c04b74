/**
 * One DATA_DIR, one process (src/journal/data-dir-lock.ts), with real processes: a second process opening the
 * folder is refused naming DATA_DIR; a holder killed with SIGKILL leaves nothing that holds it; and of two
 * processes starting together after that crash exactly one takes it (a pid file let both through), and it
 * reads what the killed process had committed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { lockDataDir } from '../../src/journal/data-dir-lock.js';

interface Holder {
  child: ChildProcess;
  /** The first line it printed (`held …` or `refused …`), or how it ended before one. */
  line: Promise<string>;
  exit: Promise<number | null>;
}

const children: ChildProcess[] = [];

function open(dir: string, ...args: string[]): Holder {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/journal/hold-data-dir.ts', dir, ...args], {
    cwd: new URL('../../', import.meta.url).pathname,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  let err = '';
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const line = new Promise<string>((resolve) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve(out.split('\n')[0]!);
    });
    void exit.then((code) => resolve(`exited ${code}: ${err}`));
  });
  return { child, line, exit };
}

afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

describe('one process per DATA_DIR', () => {
  it('refuses a second process, and a SIGKILLed holder leaves no lock: one of two starts after it takes the folder', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'momo-lock-'));
    try {
      const first = open(dir, 'write', 'before-kill');
      expect(await first.line).toBe('held -');

      const second = open(dir);
      expect(await second.line).toMatch(/^refused DATA_DIR: .* is in use by another process/);
      expect(await second.exit).toBe(3);

      first.child.kill('SIGKILL');
      await first.exit;
      // What the crash left: a socket file nobody answers on.
      expect((await readdir(dir)).filter((name) => name.startsWith('.lock.'))).toHaveLength(1);

      const [a, b] = [open(dir, 'read', 'before-kill'), open(dir, 'read', 'before-kill')];
      const lines = (await Promise.all([a.line, b.line])).sort();
      expect(lines[0]).toBe('held 1500.50');
      expect(lines[1]).toMatch(/^refused DATA_DIR: .* is in use by another process/);
      const winner = lines[0] === (await a.line) ? a : b;
      winner.child.stdin!.end();
      expect(await winner.exit).toBe(0);

      // Closed cleanly, the folder is free again, in this process too.
      const release = await lockDataDir(dir);
      await expect(lockDataDir(dir)).rejects.toThrow(/^DATA_DIR: .* is in use by another process/);
      await release();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    // PGlite starts from files: seconds each on a busy machine.
  }, 180_000);

  it('refuses a DATA_DIR too deep for a unix socket path, naming it', async () => {
    await expect(lockDataDir(path.join(tmpdir(), 'x'.repeat(120)))).rejects.toThrow(/^DATA_DIR: .* too deep/);
  });
});
