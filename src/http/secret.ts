/**
 * Comparing a secret a caller sent with the configured one without leaking, by the time taken, how much of
 * it matched or how long it is: both are hashed first, then compared in constant time.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

/** True when `given` equals `expected`, compared in constant time. */
export function sameSecret(given: string, expected: string): boolean {
  return timingSafeEqual(createHash('sha256').update(given).digest(), createHash('sha256').update(expected).digest());
}
