/**
 * Store in process memory: the default when no REDIS_URL is set (one process, lost on restart).
 * Records are kept as JSON text, as in Redis, so a caller never shares a mutable object with the store.
 * Expired entries vanish when next touched, and every {@link SWEEP_EVERY} writes a sweep drops those never
 * touched again (delivery marks); no timers run.
 */
import type { Lease, LeaseChange, Store, StoredSnapshot } from './types.js';

type Entry =
  | { kind: 'record'; json: string; version: number; expiresAt: number }
  | { kind: 'counter'; value: number; expiresAt: number }
  | { kind: 'mark'; value: string; expiresAt: number }
  | { kind: 'reservation'; counterKey: string; amount: number; given: boolean; expiresAt: number }
  | { kind: 'index'; scores: Map<string, number>; expiresAt: number };

/** Writes between two sweeps of expired entries: rare enough to cost nothing, often enough to bound memory. */
export const SWEEP_EVERY = 1000;

export interface MemoryStoreOptions {
  /** Clock in milliseconds. Default Date.now; tests pass their own to expire entries without waiting. */
  now?: () => number;
}

export class MemoryStore implements Store {
  private readonly entries = new Map<string, Entry>();
  private readonly now: () => number;
  private writes = 0;

  constructor(options: MemoryStoreOptions = {}) {
    this.now = options.now ?? Date.now;
  }

  private live(key: string): Entry | undefined {
    const entry = this.entries.get(key);
    if (entry && entry.expiresAt <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }

  /** The expiry of an entry written now; counts the write and sweeps when one is due. */
  private expiry(ttlSeconds: number): number {
    const now = this.now();
    if (++this.writes % SWEEP_EVERY === 0) {
      for (const [key, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(key);
    }
    return now + ttlSeconds * 1000;
  }

  /** Entries held, counting expired ones not yet swept. */
  get size(): number {
    return this.entries.size;
  }

  async get(key: string): Promise<StoredSnapshot | null> {
    const entry = this.live(key);
    return entry?.kind === 'record' ? { snapshot: JSON.parse(entry.json), version: entry.version } : null;
  }

  async getMany(keys: string[]): Promise<Array<StoredSnapshot | null>> {
    return Promise.all(keys.map((key) => this.get(key)));
  }

  async set(
    key: string,
    snapshot: unknown,
    expectedVersion: number | null,
    ttlSeconds: number,
    lease?: LeaseChange,
  ): Promise<number | null> {
    const entry = this.live(key);
    const current = entry?.kind === 'record' ? entry.version : null;
    if (current !== expectedVersion) return null;
    if (lease && 'take' in lease && !this.leaseFree(lease.take, lease.token)) return null;
    const version = (current ?? 0) + 1;
    this.entries.set(key, {
      kind: 'record',
      json: JSON.stringify(snapshot),
      version,
      expiresAt: this.expiry(ttlSeconds),
    });
    if (lease && 'take' in lease) this.takeLease(lease.take, lease.token, lease.ms);
    else if (lease) this.endLease(lease.release, lease.token, true);
    return version;
  }

  async delete(key: string): Promise<void> {
    this.entries.delete(key);
  }

  async claim(key: string, ttlSeconds: number, value = '1'): Promise<boolean> {
    if (this.live(key)) return false;
    this.entries.set(key, { kind: 'mark', value, expiresAt: this.expiry(ttlSeconds) });
    return true;
  }

  async addWithinLimit(
    key: string,
    amount: number,
    limit: number,
    ttlSeconds: number,
  ): Promise<{ ok: boolean; total: number }> {
    const entry = this.live(key);
    const total = entry?.kind === 'counter' ? entry.value : 0;
    if (amount === 0) return { ok: true, total };
    if (total + amount > limit) return { ok: false, total };
    this.entries.set(key, { kind: 'counter', value: total + amount, expiresAt: this.expiry(ttlSeconds) });
    return { ok: true, total: total + amount };
  }

  async reserve(
    reservationKey: string,
    counterKey: string,
    amount: number,
    limit: number,
    ttlSeconds: number,
  ): Promise<{ ok: boolean; total: number }> {
    const counter = this.live(counterKey);
    const total = counter?.kind === 'counter' ? counter.value : 0;
    if (this.live(reservationKey)) return { ok: true, total };
    if (total + amount > limit) return { ok: false, total };
    const expiresAt = this.expiry(ttlSeconds);
    this.entries.set(counterKey, { kind: 'counter', value: total + amount, expiresAt });
    this.entries.set(reservationKey, { kind: 'reservation', counterKey, amount, given: false, expiresAt });
    return { ok: true, total: total + amount };
  }

  async giveBack(reservationKey: string): Promise<boolean> {
    const reservation = this.live(reservationKey);
    if (reservation?.kind !== 'reservation' || reservation.given) return false;
    reservation.given = true;
    const counter = this.live(reservation.counterKey);
    if (counter?.kind === 'counter') counter.value = Math.max(0, counter.value - reservation.amount);
    return true;
  }

  async lease(lease: Lease, token: string, ttlMs: number): Promise<boolean> {
    if (!this.leaseFree(lease, token)) return false;
    this.takeLease(lease, token, ttlMs);
    return true;
  }

  async renewLease(lease: Lease, token: string, ttlMs: number): Promise<boolean> {
    const held = this.live(lease.key);
    if (held?.kind !== 'mark' || held.value !== token) return false;
    this.takeLease(lease, token, ttlMs);
    return true;
  }

  async releaseLease(lease: Lease, token: string, unlist: boolean): Promise<void> {
    this.endLease(lease, token, unlist);
  }

  /** No other token holds the lease. */
  private leaseFree(lease: Lease, token: string): boolean {
    const held = this.live(lease.key);
    return !(held?.kind === 'mark' && held.value !== token);
  }

  private takeLease(lease: Lease, token: string, ttlMs: number): void {
    const expiresAt = this.expiry(ttlMs / 1000);
    this.entries.set(lease.key, { kind: 'mark', value: token, expiresAt });
    this.index(lease.index).scores.set(lease.member, expiresAt);
  }

  private endLease(lease: Lease, token: string, unlist: boolean): void {
    const held = this.live(lease.key);
    if (held?.kind === 'mark' && held.value === token) this.entries.delete(lease.key);
    if (unlist && !this.live(lease.key)) this.index(lease.index).scores.delete(lease.member);
  }

  async expiredLeases(index: string, limit: number): Promise<string[]> {
    const now = this.now();
    return [...this.index(index).scores]
      .filter(([, expiresAt]) => expiresAt <= now)
      .slice(0, limit)
      .map(([member]) => member);
  }

  /** The sorted set `key` (made when missing; it never expires, as in Redis an index lives while it has members). */
  private index(key: string): Extract<Entry, { kind: 'index' }> {
    const entry = this.entries.get(key);
    if (entry?.kind === 'index') return entry;
    const made: Extract<Entry, { kind: 'index' }> = { kind: 'index', scores: new Map(), expiresAt: Infinity };
    this.entries.set(key, made);
    return made;
  }

  async close(): Promise<void> {
    this.entries.clear();
  }
}
