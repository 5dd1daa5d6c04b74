/**
 * The product instances of a chaos run: each its own process, `node dist/src/main.js` (test/product.ts), as an
 * operator runs it (`npm start`), configured by environment only. A fixed number of slots; an instance killed (SIGKILL)
 * is replaced by a new one in its slot, on the same Redis, as an orchestrator restarts a dead process (a
 * start that fails is tried again). One that exits without being killed has crashed (an unhandled rejection
 * ends a Node 20 process): it is replaced too, and reported with the end of its output.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { productArgs, ROOT } from '../product.js';
import { embedded } from '../journal/templates.js';

export interface Instance {
  /** `i1`, `i2`, ... in order of start. */
  name: string;
  slot: number;
  child: ChildProcess;
  /** Set once it listens. */
  port?: number;
  /** When the run killed it. */
  killedAt?: number;
  /** When it exited; its code or signal. */
  exited?: { at: number; code: number | null; signal: NodeJS.Signals | null };
  /** The last lines it wrote (stdout and stderr). */
  tail: string[];
}

export interface Crash {
  name: string;
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Its last lines of output. */
  tail: string[];
}

export interface FleetOptions {
  /** Instances at once. */
  size: number;
  /** The environment of a new instance (its own MOMO_BASE_URL port, say). */
  env(name: string): Promise<Record<string, string>>;
  /** Called when an instance is gone for good (its proxy port can close). */
  gone?(name: string): void | Promise<void>;
  /** Every line an instance writes (its log), for a log file. */
  onLine?(name: string, line: string): void;
  /** Progress and trouble, for the operator watching. */
  progress?(line: string): void;
}

const TAIL_LINES = 40;
const START_TIMEOUT_MS = 60_000;
const START_ATTEMPTS = 10;

export class Fleet {
  private readonly slots: Array<Instance | undefined> = [];
  /** Every instance started, in order. */
  readonly history: Instance[] = [];
  readonly crashes: Crash[] = [];
  /** Starts that failed (and were tried again), with the first lines of why. */
  readonly failedStarts: string[] = [];
  private started = 0;
  private stopping = false;
  /** Replacements under way (awaited by stop()). */
  private readonly replacing = new Set<Promise<void>>();
  kills = 0;

  constructor(private readonly options: FleetOptions) {}

  async start(): Promise<void> {
    await Promise.all(Array.from({ length: this.options.size }, (_, slot) => this.launch(slot)));
  }

  /** The instance in `slot` when it is up. */
  up(slot: number): Instance | undefined {
    const instance = this.slots[slot % this.options.size];
    return instance?.port !== undefined && instance.killedAt === undefined && !instance.exited ? instance : undefined;
  }

  /** Every slot has an instance that listens. */
  allUp(): boolean {
    return this.slots.length === this.options.size && this.slots.every((_, slot) => this.up(slot));
  }

  livePorts(): number[] {
    return this.slots.flatMap((_, slot) => this.up(slot)?.port ?? []);
  }

  byName(name: string): Instance | undefined {
    return this.history.find((i) => i.name === name);
  }

  /** SIGKILLs an instance that is up, and starts its replacement. False when it was not up. */
  kill(name: string): boolean {
    const instance = this.byName(name);
    if (!instance || this.up(instance.slot) !== instance || this.stopping) return false;
    instance.killedAt = Date.now();
    this.kills++;
    instance.child.kill('SIGKILL');
    this.options.progress?.(`chaos: killed ${name} (SIGKILL)`);
    return true;
  }

  private launch(slot: number): Promise<void> {
    const name = `i${++this.started}`;
    return this.options.env(name).then(
      (env) =>
        new Promise<void>((resolve, reject) => {
          const child = spawn(process.execPath, productArgs(), {
            cwd: ROOT,
            env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...embedded(), ...env },
            stdio: ['ignore', 'pipe', 'pipe'],
          });
          const instance: Instance = { name, slot, child, tail: [] };
          this.slots[slot] = instance;
          this.history.push(instance);
          // timer-ok: a bound, not a wait: the line saying it listens ends it.
          const timer = setTimeout(
            () => reject(new Error(`${name} did not start: ${instance.tail.join('\n')}`)),
            START_TIMEOUT_MS,
          );
          let partial = '';
          const read = (chunk: Buffer) => {
            const lines = (partial + chunk.toString()).split('\n');
            partial = lines.pop() ?? '';
            for (const line of lines) {
              instance.tail.push(line);
              if (instance.tail.length > TAIL_LINES) instance.tail.shift();
              this.options.onLine?.(name, line);
              const listening = /listening on http:\/\/localhost:(\d+)/.exec(line);
              if (listening && instance.port === undefined) {
                instance.port = Number(listening[1]);
                clearTimeout(timer);
                resolve();
              }
            }
          };
          child.stdout!.on('data', read);
          child.stderr!.on('data', read);
          child.once('exit', (code, signal) => {
            clearTimeout(timer);
            instance.exited = { at: Date.now(), code, signal };
            if (instance.port === undefined)
              reject(new Error(`${name} exited before listening (${code ?? signal}): ${instance.tail.join('\n')}`));
            this.exited(instance);
          });
        }),
    );
  }

  private exited(instance: Instance): void {
    void this.options.gone?.(instance.name);
    // One that never listened failed to start: replace() tries again.
    if (this.stopping || instance.port === undefined) return;
    if (instance.killedAt === undefined) {
      this.crashes.push({
        name: instance.name,
        code: instance.exited!.code,
        signal: instance.exited!.signal,
        tail: instance.tail.slice(-20),
      });
      this.options.progress?.(
        `chaos: ${instance.name} exited by itself (${instance.exited!.code ?? instance.exited!.signal}); replacing it`,
      );
    }
    if (this.slots[instance.slot] === instance) this.replace(instance.slot);
  }

  /**
   * Starts a new instance in `slot`, as an orchestrator restarts a dead process: a start that fails (the
   * process exits before it listens, say while Redis refuses writes) is tried again once it has exited.
   */
  private replace(slot: number): void {
    const replacement: Promise<void> = (async () => {
      for (let attempt = 1; !this.stopping; attempt++) {
        try {
          await this.launch(slot);
          return;
        } catch (error) {
          const reason = String(error).split('\n').slice(0, 2).join(' ');
          this.failedStarts.push(reason);
          this.options.progress?.(`chaos: a new instance in slot ${slot} did not start (${reason}); trying again`);
          if (attempt === START_ATTEMPTS) {
            this.crashes.push({
              name: `slot ${slot}`,
              code: null,
              signal: null,
              tail: [`no instance started in ${START_ATTEMPTS} attempts: ${String(error)}`],
            });
            return;
          }
          await this.ended(slot);
        }
      }
    })().finally(() => this.replacing.delete(replacement));
    this.replacing.add(replacement);
  }

  /**
   * The failed start in `slot` has ended: a process that never listened in time is killed, and the next start
   * waits for it to exit (its slot and its connections given back), as an orchestrator restarts a dead one.
   */
  private async ended(slot: number): Promise<void> {
    const failed = this.slots[slot];
    if (!failed || failed.exited) return;
    const exit = new Promise<void>((resolve) => failed.child.once('exit', () => resolve()));
    failed.child.kill('SIGKILL');
    await exit;
  }

  /**
   * Ends the run: waits for replacements, then SIGTERM to each instance (it finishes what it holds and exits),
   * SIGKILL after `graceMs`.
   */
  async stop(graceMs = 20_000): Promise<void> {
    while (this.replacing.size > 0) await Promise.all(this.replacing);
    this.stopping = true;
    await Promise.all(
      this.slots.map(async (instance) => {
        if (!instance || instance.exited) return;
        const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
          instance.child.once('exit', (code, signal) => resolve({ code, signal })),
        );
        instance.child.kill('SIGTERM');
        // timer-ok: the grace a SIGTERM gets before a SIGKILL, as an orchestrator gives it; its exit ends it.
        const timer = setTimeout(() => instance.child.kill('SIGKILL'), graceMs);
        const { code, signal } = await exit;
        clearTimeout(timer);
        if (code !== 0)
          this.crashes.push({
            name: instance.name,
            code,
            signal,
            tail: ['on SIGTERM at the end:', ...instance.tail.slice(-20)],
          });
      }),
    );
  }
}
