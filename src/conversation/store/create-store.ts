/** Chooses the session store: Redis when a URL is given (REDIS_URL), memory otherwise. */
import { MemoryStore } from './memory-store.js';
import { RedisStore } from './redis-store.js';
import type { SessionStore } from '../types.js';

export interface SessionStoreOptions {
  /** REDIS_URL. Unset: the memory store (one process, sessions lost on restart). */
  redisUrl?: string;
  /** Key prefix in Redis. Default `momo:` (see RedisStoreOptions). */
  keyPrefix?: string;
}

export function createSessionStore(options: SessionStoreOptions = {}): SessionStore {
  return options.redisUrl ? new RedisStore({ url: options.redisUrl, keyPrefix: options.keyPrefix }) : new MemoryStore();
}
