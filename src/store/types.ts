/**
 * The store's own types: what the engine, the journal, the queues and the ops pages keep in it. Below the
 * engine: nothing here knows a flow or a channel's turn.
 */

/** The chat channels; a chat's keys name theirs (keys.ts), as does the chat address (chat-address.ts). */
export type Channel = 'ussd' | 'telegram' | 'slack' | 'whatsapp';

/** Where a later message goes: the chat that started the operation. */
export interface Address {
  channel: Channel;
  conversationId: string;
}

/** A lease and where it is listed while held (Store.lease). */
export interface Lease {
  key: string;
  index: string;
  member: string;
}

export interface StoredSnapshot {
  snapshot: unknown;
  version: number;
}

/**
 * Conversation records and the small atomic records around them. Memory and Redis implementations.
 * Every write carries a TTL in seconds.
 */
/**
 * A run's lease changed by the write of its conversation record, in the same atomic step (Store.set):
 * the first write of a run takes it, the write of its outcome ends it. One round trip instead of two on the
 * hop that runs a payment, and no moment where one is done and the other not.
 */
export type LeaseChange =
  /** Take the lease for `token` for `ms` and list it, as lease() does. */
  | { take: Lease; token: string; ms: number }
  /** End the lease if `token` holds it and unlist the member, as releaseLease(…, true) does. */
  | { release: Lease; token: string };

export interface Store {
  get(key: string): Promise<StoredSnapshot | null>;
  /**
   * Compare-and-set: writes when the stored version equals expectedVersion (null = key must be absent).
   * Returns the new version, or null when another writer got there first. With `lease`, the lease changes in
   * the same atomic step; a lease to take that another token holds is a conflict too (nothing is written).
   */
  set(
    key: string,
    snapshot: unknown,
    expectedVersion: number | null,
    ttlSeconds: number,
    lease?: LeaseChange,
  ): Promise<number | null>;
  /** Several records in one round trip (a USSD dial's conversation, profile and pending outcomes): null for each absent. */
  getMany(keys: string[]): Promise<Array<StoredSnapshot | null>>;
  delete(key: string): Promise<void>;
  /** SET NX with expiry: true for the first caller only (duplicate-delivery and dedup marks). */
  claim(key: string, ttlSeconds: number, value?: string): Promise<boolean>;
  /**
   * Atomically adds `amount` (an integer in minor units) to a counter unless the total would pass `limit`.
   * Returns whether it was added and the total after the call.
   */
  addWithinLimit(
    key: string,
    amount: number,
    limit: number,
    ttlSeconds: number,
  ): Promise<{ ok: boolean; total: number }>;
  /**
   * Atomically, once per `reservationKey`: adds `amount` to the counter `counterKey` unless the total would pass
   * `limit`, and records the reservation (the counter and the amount) under `reservationKey`. A reservation
   * already recorded (held or given back) makes this a no-op that answers ok. Returns whether the amount is
   * reserved and the counter's total.
   */
  reserve(
    reservationKey: string,
    counterKey: string,
    amount: number,
    limit: number,
    ttlSeconds: number,
  ): Promise<{ ok: boolean; total: number }>;
  /**
   * Gives a held reservation back: takes its amount off its counter and marks it given back (a second call,
   * or a reservation never made, changes nothing). Returns whether something was given back.
   */
  giveBack(reservationKey: string): Promise<boolean>;
  /**
   * Takes the lease `lease.key` for `token` for `ttlMs`: true when it was free (or already the token's: the
   * take sets its expiry again), false when another token holds it. Lists `lease.member` in the sorted set
   * `lease.index` scored by the lease's expiry (the store's clock), so a lease whose holder died is found after
   * it expired. Only for taking: a holder keeping its lease alive calls renewLease, which never takes one.
   */
  lease(lease: Lease, token: string, ttlMs: number): Promise<boolean>;
  /**
   * Extends the lease `lease.key` to `ttlMs` from now, and its score in `lease.index` with it, only while
   * `token` holds it. False, and nothing changed, when the lease is free or another token's: a renewal that
   * arrives late (its lease lapsed, taken over, finished and released) must not take the lease again.
   */
  renewLease(lease: Lease, token: string, ttlMs: number): Promise<boolean>;
  /**
   * Ends the lease if `token` holds it. With `unlist` (nothing is left to run) also takes `lease.member` off
   * the index unless a lease is held again; without it the entry stays for a sweep to look at.
   */
  releaseLease(lease: Lease, token: string, unlist: boolean): Promise<void>;
  /** Members of the sorted set `index` whose lease expired (scored before the store's clock), at most `limit`. */
  expiredLeases(index: string, limit: number): Promise<string[]>;
  /**
   * Whether every write this store sent so far to where `key` lives is held where a failover cannot drop it:
   * by every replica in sync of the master (WAIT, up to a second; a master with none connected holds them
   * alone). On Sentinel the one master holds every key (`key` is ignored); on a cluster the master serving
   * `key`'s slot, so `key` is the one whose writes must be held (its slot's other keys' are held with it).
   * Absent where no failover drops acknowledged writes (memory, one server). A connection that was replaced
   * since (a failover) proves nothing of the writes sent before it: read them back.
   */
  replicated?(key: string): Promise<boolean>;
  /** Frees resources (closes the Redis connection). */
  close(): Promise<void>;
}
