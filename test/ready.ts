/**
 * What the suite's files need made first (dist/, the template databases: global-setup.ts), made beside the
 * first files instead of before them: the unit files need none of it and start at once. globalSetup serves
 * the work's end on a Unix socket named to the workers in {@link READY_SETTING}; a file of the suite waits
 * on it before its first hook (suite-setup.ts). Every connection is answered when
 * the work ends: `ok`, or `failed: ` and why, which fails the file that asked.
 */
import { createConnection, createServer, type Socket } from 'node:net';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const READY_SETTING = 'TEST_READY';

/** Serves `work`'s end on a socket of this run's own; returns its path and how to close it. */
export async function serveReady(work: Promise<unknown>): Promise<{ path: string; close: () => Promise<void> }> {
  const path = join(tmpdir(), `momo-ready-${process.pid}.sock`);
  await rm(path, { force: true });
  const said = work.then(
    () => 'ok',
    (error: unknown) => `failed: ${error instanceof Error ? error.message : String(error)}`,
  );
  const open = new Set<Socket>();
  const server = createServer((socket) => {
    open.add(socket);
    socket.on('error', () => socket.destroy());
    socket.on('close', () => open.delete(socket));
    void said.then((answer) => socket.end(answer));
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  return {
    path,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of open) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Waits for the work globalSetup started; throws with its failure. Without a server, nothing to wait for. */
export async function awaitReady(): Promise<void> {
  const path = process.env[READY_SETTING];
  if (!path) return;
  const socket = createConnection(path);
  let answer = '';
  socket.setEncoding('utf8').on('data', (chunk: string) => (answer += chunk));
  await new Promise<void>((resolve, reject) => {
    socket.once('end', resolve);
    socket.once('error', reject);
  });
  socket.destroy();
  if (answer !== 'ok') throw new Error(`the run's setup (test/global-setup.ts) ${answer || 'ended without an answer'}`);
}
