/**
 * The turn of the files that start the product as processes and kill or signal them ({@link TURN_FILES}): they
 * run in the suite's workers, beside its other files, but one of them at a time, so that one's processes
 * starting and dying do not eat the time another measures against a deadline, and each has the product's
 * `momo:` keys in the test Redis to itself. globalSetup serves the turn on a Unix socket named to the workers
 * in {@link TURN_SETTING}; each such file takes it before its first hook (suite-setup.ts) and gives it back
 * when it ends. A connection is a place in the line: the first is told to go, and its close, however its
 * worker ends, tells the next.
 */
import { createConnection, createServer, type Socket } from 'node:net';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const TURN_SETTING = 'TEST_PROCESSES_TURN';

/** The files that take the turn: paths from the repository's root, or folders (ending in `/`) of them. */
export const TURN_FILES = [
  'test/chaos/chaos.test.ts',
  'test/chaos/rejections.test.ts',
  'test/shutdown/',
  'test/e2e/money-kept.test.ts',
];

/** Whether the test file at `path` (from the repository's root) takes the turn. */
export const takesTurn = (path: string): boolean =>
  TURN_FILES.some((file) => (file.endsWith('/') ? path.startsWith(file) : path === file));

/** Serves the turn on a socket of this run's own; returns its path and how to close it. */
export async function serveTurns(): Promise<{ path: string; close: () => Promise<void> }> {
  const path = join(tmpdir(), `momo-turn-${process.pid}.sock`);
  await rm(path, { force: true });
  const line: Socket[] = [];
  const server = createServer((socket) => {
    line.push(socket);
    if (line.length === 1) socket.write('go');
    socket.on('error', () => socket.destroy());
    socket.on('close', () => {
      const first = line[0] === socket;
      line.splice(line.indexOf(socket), 1);
      if (first) line[0]?.write('go');
    });
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  return {
    path,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of line) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Waits for the turn; gives it back when the returned socket is closed. Without a server, no turn is kept. */
export async function takeTurn(): Promise<Socket | undefined> {
  const path = process.env[TURN_SETTING];
  if (!path) return undefined;
  const socket = createConnection(path);
  await new Promise<void>((resolve, reject) => {
    socket.once('data', () => resolve());
    socket.once('error', reject);
  });
  return socket;
}
