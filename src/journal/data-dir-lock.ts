/**
 * The embedded PGlite's folder is one process's: PGlite is PostgreSQL in one process, and two processes writing
 * one folder would corrupt it. The folder is taken by a LISTENING unix socket in DATA_DIR, `.lock.<n>`: the
 * kernel closes a socket with its process, however it ends (SIGKILL, a crash, an OOM kill), so a crashed
 * process leaves no holder behind, only a socket file that nothing answers on. A pid file could not say this: a
 * pid is reused, and two starts after a crash could both find it stale and both take it.
 *
 * Taking it:
 * 1. the highest `.lock.<n>` present is probed with a connect: an answer means a live holder, and the start is
 *    refused (ConfigError naming DATA_DIR);
 * 2. else (no file, or no answer: a crash's) the process binds `.lock.<n+1>`. Binding a unix socket path is
 *    create-if-absent in the kernel, so of two starts that both found `<n>` dead exactly one binds `<n+1>`; the
 *    other is refused the name (EADDRINUSE) and starts over at step 1, where it finds `<n+1>` alive.
 * The files of older generations are removed by the winner. The same path holds between containers sharing the
 * folder (a unix socket is reached through the file system), unlike an abstract socket.
 *
 * A unix socket's path holds 107 bytes: a DATA_DIR deeper than that is refused in one line naming it.
 */
import { readdir, unlink } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { ConfigError } from '../config.js';

const NAME = /^\.lock\.(\d{1,15})$/;
/** sun_path's size on Linux, less its terminating NUL. */
const MAX_SOCKET_PATH = 107;

/** Takes `dir` for this process, or throws ConfigError (naming DATA_DIR). Resolves to the release. */
export async function lockDataDir(dir: string): Promise<() => Promise<void>> {
  const longest = path.join(dir, `.lock.${Number.MAX_SAFE_INTEGER}`);
  if (Buffer.byteLength(longest) > MAX_SOCKET_PATH) {
    throw new ConfigError(
      `DATA_DIR: ${dir} is too deep for its lock (a unix socket path holds ${MAX_SOCKET_PATH} bytes): use a shorter path`,
    );
  }
  for (let round = 0; round < 20; round++) {
    const top = await highest(dir);
    if (top !== undefined && (await answers(path.join(dir, `.lock.${top}`)))) {
      throw new ConfigError(
        `DATA_DIR: ${dir} is in use by another process, and the embedded PGlite serves one process: stop it, use another DATA_DIR, or set DATABASE_URL`,
      );
    }
    const next = (top ?? 0) + 1;
    const server = await bind(path.join(dir, `.lock.${next}`));
    if (!server) continue; // another start bound it first: look again
    for (const name of await readdir(dir)) {
      const n = NAME.exec(name);
      if (n && Number(n[1]) < next) await unlink(path.join(dir, name)).catch(() => {});
    }
    // The lock must not keep the process alive on its own; it ends with the process.
    server.unref();
    return () => new Promise<void>((resolve) => server.close(() => resolve()));
  }
  throw new ConfigError(`DATA_DIR: could not take ${dir} (other starts kept taking it)`);
}

/** The highest generation of lock in `dir`, if any. */
async function highest(dir: string): Promise<number | undefined> {
  let top: number | undefined;
  for (const name of await readdir(dir)) {
    const n = NAME.exec(name);
    if (n) top = Math.max(top ?? 0, Number(n[1]));
  }
  return top;
}

/**
 * Whether a process listens on the socket. Refused (or gone) three times in a row is no one: a socket between
 * its bind and its listen (microseconds, in the same call) refuses once. Any other failure counts as a holder:
 * refusing a start is the safe side.
 */
async function answers(socket: string): Promise<boolean> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const code = await new Promise<string | undefined>((resolve) => {
      const client = net.connect(socket);
      client.once('connect', () => {
        client.destroy();
        resolve(undefined);
      });
      client.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
    });
    if (code === undefined) return true;
    if (code !== 'ECONNREFUSED' && code !== 'ENOENT') return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return false;
}

/** Listens on `socket`; undefined when the name is taken (EADDRINUSE). */
function bind(socket: string): Promise<net.Server | undefined> {
  return new Promise((resolve, reject) => {
    // A holder only listens: whoever connects (a start probing) is closed at once.
    const server = net.createServer((connection) => connection.destroy());
    server.once('error', (error: NodeJS.ErrnoException) =>
      error.code === 'EADDRINUSE' ? resolve(undefined) : reject(error),
    );
    server.listen(socket, () => resolve(server));
  });
}
