/**
 * Keeps each process's directory of people fresh without the hot path reading the database: every
 * `everyMs` (default 1 s, so a change made in any process applies everywhere within 2 s) one tiny query reads
 * the people version; when it moved, the whole directory is read again and replaces the access policy's in one
 * step. A change made in this process is applied at once ({@link PeopleSync.refresh}). A database that does
 * not answer leaves the last directory in use (logged once until it answers again).
 */
import type { AccessPolicy } from '../conversation/calls/access-policy.js';
import type { Logger } from '../log.js';
import type { People } from './people.js';

export interface PeopleSyncOptions {
  people: People;
  policy: AccessPolicy;
  logger: Logger;
  /** Milliseconds between looks at the people version. Default 1000. */
  everyMs?: number;
}

export class PeopleSync {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private failing = false;

  constructor(private readonly o: PeopleSyncOptions) {}

  /** Reads the directory now when its version moved (or `force`), and puts it in use. */
  refresh(force = false): Promise<void> {
    // One read at a time: a look that starts while one runs waits for it, then looks again.
    const next = (this.running ?? Promise.resolve()).then(() => this.look(force));
    this.running = next.finally(() => {
      if (this.running === next) this.running = undefined;
    });
    return next;
  }

  private async look(force: boolean): Promise<void> {
    const { people, policy, logger } = this.o;
    try {
      const version = await people.version();
      if (!force && version === policy.directory.version) return;
      const directory = await people.load(policy.directory.wildcards);
      if (directory.version >= policy.directory.version || force) policy.useDirectory(directory);
      if (this.failing) logger.info('people: the directory is read again');
      this.failing = false;
    } catch (err) {
      if (!this.failing)
        logger.warn({ err: String(err) }, 'people: the directory could not be read; the last one stays in use');
      this.failing = true;
    }
  }

  /** Looks every `everyMs` until stop(). */
  start(): void {
    const every = this.o.everyMs ?? 1000;
    this.timer = setInterval(() => void this.refresh(), every);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running?.catch(() => undefined);
  }
}
