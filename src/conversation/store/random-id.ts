/**
 * Short random ids of the engine and its store: 8 random bytes (64 bits, 11 base64url characters), cut from
 * a pool refilled 128 ids at a time. A synchronous `randomBytes(8)` per id costs a call into OpenSSL each
 * time (about 1.6% of a USSD request's CPU in bench/profile/ussd.ts); the pool makes it one per 128 ids.
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
