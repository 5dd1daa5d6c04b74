/** The store below the engine: records, leases and counters in memory or Redis, and every key they sit under. */
export { createStore, type StoreOptions } from './create-store.js';
export { MemoryStore, type MemoryStoreOptions } from './memory-store.js';
export { RedisStore, type RedisStoreOptions } from './redis-store.js';
export type { Lease, LeaseChange, Store, StoredSnapshot } from './types.js';
