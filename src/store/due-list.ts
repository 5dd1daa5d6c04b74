/**
 * A small list of ids, each with when a sweep should look at it (ms), kept in a fixed number of store records
 * (parts, each in its own slot on a cluster: keys.ts) and changed with compare-and-set: the payouts whose
 * requests are still being made (src/payouts). An id lives
 * in the part its key builder names; due() reads every part at once. Bounded: a full part refuses a new id.
 */
import { changeStored } from './change-stored.js';
import type { Store } from './types.js';

/** The list outlives its entries: it is written again with every change. */
const LIST_TTL_SECONDS = 30 * 24 * 3600;

export class DueList {
  /** Most ids in one part: `max` over the parts, rounded up. */
  private readonly maxPerPart: number;

  /**
   * @param partOf the key of the part that lists an id
   * @param parts the keys of every part
   * @param max most ids listed in all (each part holds its share)
   */
  constructor(
    private readonly store: Store,
    private readonly partOf: (id: string) => string,
    private readonly parts: () => string[],
    max: number,
  ) {
    this.maxPerPart = Math.ceil(max / Math.max(1, parts().length));
  }

  /** Lists `id` at `due` (ms), or takes it off (`due` null). False when its part is full. */
  async schedule(id: string, due: number | null): Promise<boolean> {
    let full = false;
    const key = this.partOf(id);
    await changeStored<Record<string, number>>(
      this.store,
      key,
      LIST_TTL_SECONDS,
      (stored) => {
        const open = { ...(stored ?? {}) };
        full = due !== null && !(id in open) && Object.keys(open).length >= this.maxPerPart;
        if (due === null ? !(id in open) : full) return null;
        if (due === null) delete open[id];
        else open[id] = due;
        return open;
      },
      key,
    );
    return !full;
  }

  /** The ids whose time has come. */
  async due(now: number): Promise<string[]> {
    const parts = await Promise.all(this.parts().map((key) => this.store.get(key)));
    return parts.flatMap((part) =>
      Object.entries((part?.snapshot as Record<string, number> | undefined) ?? {})
        .filter(([, due]) => due <= now)
        .map(([id]) => id),
    );
  }
}
