/**
 * Short random ids of the engine and its store: 8 random bytes (64 bits, 11 base64url characters), cut from
 * a pool refilled 128 ids at a time: one call into OpenSSL per 128 ids rather than one per id (a hop makes
 * several).
 * Used for write ids and claim tokens (redis-store.ts) and run ids (runner.ts): unguessable enough to tell
 * our own write or lease from another's, never a secret.
 */
import { randomFillSync } from 'node:crypto';

const BYTES = 8;
const pool = Buffer.alloc(BYTES * 128);
let offset = pool.length;

export function randomId(): string {
  if (offset === pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  offset += BYTES;
  return pool.toString('base64url', offset - BYTES, offset);
}
