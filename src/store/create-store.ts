/** Chooses the store: Redis when one is given (REDIS_URL, Sentinel or Cluster), memory otherwise. */
import type { Logger } from '../log.js';
import type { RedisTarget } from '../redis/connect.js';
import { MemoryStore } from './memory-store.js';
import { RedisStore } from './redis-store.js';
import type { Store } from './types.js';

export interface StoreOptions {
  /** Where Redis is (src/redis/connect.ts). Unset: the memory store (one process, records lost on restart). */
  redisUrl?: RedisTarget;
  /** Where the connection's errors are logged (boundedly). */
  logger?: Logger;
  /** Key prefix in Redis. Default `momo:` (see RedisStoreOptions). */
  keyPrefix?: string;
}

export function createStore(options: StoreOptions = {}): Store {
  return options.redisUrl
    ? new RedisStore({
        url: options.redisUrl,
        keyPrefix: options.keyPrefix,
        ...(options.logger ? { logger: options.logger } : {}),
      })
    : new MemoryStore();
}
