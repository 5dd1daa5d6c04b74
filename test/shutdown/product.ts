/** The product as a process of its own (`node --import tsx src/main.ts`), as an operator runs it. */
import { spawn, type ChildProcess } from 'node:child_process';

export interface ProductProcess {
  child: ChildProcess;
  /** http://127.0.0.1:<port>, once it listens. */
  url: string;
  /** Resolves with the exit code (null when killed by a signal). */
  exit: Promise<number | null>;
  output(): string;
}

/** Starts the product with `env` (and PATH, PORT 0) and resolves once it listens. */
export function startProductProcess(env: Record<string, string>): Promise<ProductProcess> {
  let output = '';
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: new URL('../../', import.meta.url).pathname,
    env: { PATH: process.env.PATH, PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the product did not start: ${output}`)), 30_000);
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      const m = /listening on http:\/\/localhost:(\d+)/.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: `http://127.0.0.1:${m[1]}`, exit, output: () => output });
      }
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    void exit.then(() => reject(new Error(`the product exited before listening: ${output}`)));
  });
}
