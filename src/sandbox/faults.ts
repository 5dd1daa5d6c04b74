/**
 * Faults a developer turns on to see the client and the product live with them (`POST /sandbox/faults`):
 * - maintenance: every call of the main API and the vending group is answered 503 `{detail}` (the
 *   spec's "service unavailable (maintenance)"), before its key is even read, and changes nothing;
 * - latencyMs: every answer of the main API and the vending group waits this long first.
 * The controls under /sandbox are never slowed nor stopped, so a fault can always be turned off.
 */
import type { RequestHandler } from 'express';
import { z } from 'zod';
import { ApiError, validate } from './errors.js';
import { boolean } from './fields.js';

/** Longest latency a control may set: past the client's 15 s timeout and the service's 5 s webhook wait. */
export const MAX_LATENCY_MS = 60_000;

export interface Faults {
  maintenance: boolean;
  latencyMs: number;
}

export const MAINTENANCE_DETAIL = 'Service unavailable: the service is down for maintenance. Try again later.';

export const faultsSchema = z
  .object({
    maintenance: boolean,
    latencyMs: z
      .number({ error: 'Give latencyMs as a number of milliseconds.' })
      .int('Give latencyMs as a whole number of milliseconds.')
      .min(0, 'latencyMs cannot be negative.')
      .max(MAX_LATENCY_MS, `latencyMs is at most ${MAX_LATENCY_MS}.`),
  })
  .partial()
  .strict();

/** Applies a control's changes (both fields optional; others are refused) and answers the faults now on. */
export function setFaults(faults: Faults, changes: unknown): Faults {
  Object.assign(faults, validate(faultsSchema, changes));
  return { ...faults };
}

/**
 * The gate in front of an API: waits latencyMs, then refuses with 503 in maintenance (written by the API's
 * own error handler, in its own shape: main API `{detail}`, vending envelope).
 */
export function faultGate(faults: Faults): RequestHandler {
  return (_req, _res, next) => {
    const go = () => next(faults.maintenance ? new ApiError(503, { detail: MAINTENANCE_DETAIL }) : undefined);
    if (faults.latencyMs > 0) setTimeout(go, faults.latencyMs);
    else go();
  };
}
