/**
 * A small list of ids, each with when a sweep should look at it (ms), kept in one store record and changed
 * with compare-and-set: the held payments still to decide or send (src/approvals), the payouts whose
 * requests are still being made (src/payouts). Bounded: a full list refuses a new id.
 */
import { changeStored } from './change-stored.js';
import type { SessionStore } from '../types.js';

/** The list outlives its entries: it is written again with every change. */
const LIST_TTL_SECONDS = 30 * 24 * 3600;

export class DueList {
  constructor(
    private readonly store: SessionStore,
    private readonly key: string,
    private readonly max: number,
  ) {}

  /** Lists `id` at `due` (ms), or takes it off (`due` null). False when the list is full. */
  async schedule(id: string, due: number | null): Promise<boolean> {
    let full = false;
    await changeStored<Record<string, number>>(
      this.store,
      this.key,
      LIST_TTL_SECONDS,
      (stored) => {
        const open = { ...(stored ?? {}) };
        full = due !== null && !(id in open) && Object.keys(open).length >= this.max;
        if (due === null ? !(id in open) : full) return null;
        if (due === null) delete open[id];
        else open[id] = due;
        return open;
      },
      this.key,
    );
    return !full;
  }

  /** The ids whose time has come. */
  async due(now: number): Promise<string[]> {
    const open = ((await this.store.get(this.key))?.snapshot as Record<string, number> | undefined) ?? {};
    return Object.entries(open)
      .filter(([, due]) => due <= now)
      .map(([id]) => id);
  }
}
