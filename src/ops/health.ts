/**
 * /healthz: the process is alive. /readyz: the store takes a write (a short-lived probe mark: a Redis
 * that only reads, a replica left behind by a failover, is not ready), the journal's database takes a write (a
 * transaction id assigned, nothing kept: without it no payment may move) and the service is reachable; its status
 * code is for everyone (load balancers), its details (what failed and why) only with OPS_TOKEN when set.
 * Anyone may call it as often as they like, so neither check runs per call: each runs once at a time, callers
 * meanwhile sharing it, and its result is reused for a while after (the store's for `STORE_CHECK_MS`: a flood
 * costs one probe write per process in that time; the journal's the same; the service's for `cacheMs`, a failure's
 * for `STORE_CHECK_MS`). A journal probe still waiting past its timeout is not repeated until it comes back, so a
 * database that stopped answering is not sent a probe a second.
 * The service check is an HTTP HEAD of its base address (any answer counts): it never touches the API, whose
 * reads are limited to 30 a minute. Added to the app itself, like every route of the product: a Router
 * mounted at the root would be walked by every request.
 */
import type { Express } from 'express';
import { keys } from '../store/keys.js';
import { randomId } from '../store/random-id.js';
import type { Store } from '../store/types.js';
import { hasOpsToken } from './ops-token.js';

export interface HealthOptions {
  store: Store;
  /** Base address of the service. */
  serviceUrl: string;
  /** How long a service check that passed is reused, ms (a failed one: STORE_CHECK_MS). Default 30000. */
  cacheMs?: number;
  /** Probe timeout, ms. Default 2000. */
  timeoutMs?: number;
  fetch?: typeof fetch;
  /** OPS_TOKEN: the Bearer token /readyz's details need. Default none: details for everyone. */
  opsToken?: string;
  /**
   * The journal (src/journal, Journal.takesWrites): not ready while its database does not take a write. Unset:
   * not checked.
   */
  journal?: { takesWrites(): Promise<void> };
  /** The process is stopping (SIGTERM): /readyz answers 503 at once, so a balancer stops sending. Default never. */
  draining?: () => boolean;
}

/** How long a probe mark lives, s. */
const PROBE_SECONDS = 10;

/** How long a store check's result is reused, ms: short, so a store that stops taking writes is soon said. */
export const STORE_CHECK_MS = 1000;

interface Check {
  ok: boolean;
  detail: string;
}

/**
 * `check` run once at a time (callers meanwhile share it), its result reused for `ms` after it settles; a
 * failure for `STORE_CHECK_MS` at most, so a store or service back after a blip is soon said ready.
 */
function reused(check: () => Promise<Check>, ms: number): () => Promise<Check> {
  let result: Promise<Check> | undefined;
  let freshUntil = 0;
  return () => {
    if (!result || Date.now() >= freshUntil) {
      freshUntil = Infinity;
      result = check().then((c) => {
        freshUntil = Date.now() + (c.ok ? ms : Math.min(ms, STORE_CHECK_MS));
        return c;
      });
    }
    return result;
  };
}

export function addHealthRoutes(app: Express, options: HealthOptions): void {
  const doFetch = options.fetch ?? fetch;

  async function serviceReachable(): Promise<Check> {
    try {
      const res = await doFetch(options.serviceUrl, {
        method: 'HEAD',
        signal: AbortSignal.timeout(options.timeoutMs ?? 2000),
      });
      return { ok: true, detail: `HTTP ${res.status}` };
    } catch (err) {
      return { ok: false, detail: err instanceof Error ? err.message : String(err) };
    }
  }

  async function storeTakesWrites(): Promise<Check> {
    try {
      // A disconnected Redis client queues commands rather than failing: bound the wait. A fresh key each
      // time, so the write is a real one (SET NX of a new key) wherever it lands.
      await Promise.race([
        options.store.claim(keys.readyProbe(randomId()), PROBE_SECONDS, 'ready').then((written) => {
          if (!written) throw new Error('the store did not take the probe write');
        }),
        new Promise((_, reject) =>
          setTimeout(() => reject(new Error('store timed out')), options.timeoutMs ?? 2000).unref(),
        ),
      ]);
      return { ok: true, detail: 'ok' };
    } catch (err) {
      return { ok: false, detail: err instanceof Error ? err.message : String(err) };
    }
  }

  /** The journal's probe still out (it outlived its timeout): not sent again until it comes back. */
  let journalProbe: Promise<void> | undefined;
  async function journalTakesWrites(): Promise<Check> {
    if (journalProbe) return { ok: false, detail: 'the last journal probe has not come back' };
    const probe = options.journal!.takesWrites();
    journalProbe = probe;
    const settled = () => {
      if (journalProbe === probe) journalProbe = undefined;
    };
    probe.then(settled, settled);
    try {
      await Promise.race([
        probe,
        new Promise((_, reject) =>
          setTimeout(() => reject(new Error('journal timed out')), options.timeoutMs ?? 2000).unref(),
        ),
      ]);
      return { ok: true, detail: 'ok' };
    } catch (err) {
      return { ok: false, detail: err instanceof Error ? err.message : String(err) };
    }
  }

  const storeCheck = reused(storeTakesWrites, STORE_CHECK_MS);
  const journalCheck = options.journal ? reused(journalTakesWrites, STORE_CHECK_MS) : undefined;
  const serviceCheck = reused(serviceReachable, options.cacheMs ?? 30_000);

  app.get('/healthz', (_req, res) => {
    res.json({ ok: true });
  });
  app.get('/readyz', async (req, res) => {
    if (options.draining?.()) {
      res.status(503).json({ ok: false, draining: true });
      return;
    }
    const [store, service, journal] = await Promise.all([storeCheck(), serviceCheck(), journalCheck?.()]);
    const ok = store.ok && service.ok && (journal?.ok ?? true);
    res
      .status(ok ? 200 : 503)
      .json(hasOpsToken(req, options.opsToken) ? { ok, store, service, ...(journal ? { journal } : {}) } : { ok });
  });
}
