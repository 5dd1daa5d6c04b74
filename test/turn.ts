/**
 * The `processes` project's turn (vitest.config.ts): its files run in the suite's two workers, beside the
 * suite's files, but one of them at a time. globalSetup serves the turn on a Unix socket named to the workers
 * in {@link TURN_SETTING}; each such file takes it before its first hook (turn-setup.ts) and gives it back
 * when it ends. A connection is a place in the line: the first is told to go, and its close, however its
 * worker ends, tells the next.
 */
import { createConnection, createServer, type Socket } from 'node:net';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const TURN_SETTING = 'TEST_PROCESSES_TURN';

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
