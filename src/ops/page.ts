/**
 * The operator pages and their data, under /ops:
 * - `GET /ops`: the page (page/index.html, page/ops.js, page/ops.css): the funnel of each flow with its
 *   drop-off, time per step, outcomes per channel over the last days, the notification queue and the
 *   service's 429s and errors; it refreshes itself;
 * - `GET /ops/funnel.json?days=<1..FUNNEL_DAYS>&channel=<ussd|telegram|slack|whatsapp>`: the funnel (funnel.ts);
 * - `GET /ops/status.json`: the queue and the service's answers (metrics.ts);
 * - `GET /ops/money.json?days=&channel=` (the funnel's query): money as the journal says it came out, per day,
 *   currency and kind: completed, failed, still open (money.ts); 503 without a journal that answers;
 * - `GET /ops/chart.umd.min.js`: Chart.js, served from its npm package (no CDN);
 * - the money pages and exports (payments.ts): `/ops/payments`, `/ops/payments/<ref>`, `/ops/payments.json`,
 *   `/ops/payments.csv`; the reconciliation runs and their differences (reconciliation.ts): `/ops/reconciliation`;
 *   the chain's head and retention's receipts (journal-page.ts): `/ops/journal`;
 * - the daily statement (statements.ts): `/ops/statements`, `/ops/statements.csv`, `/ops/statements.json`;
 * - the People page (people-page.ts): `/ops/people`, `/ops/people.json`, its changes;
 * - the delivery log of signed events out and its replay (deliveries.ts): `/ops/deliveries`;
 * - the operators' audit (audit-page.ts): `/ops/audit`, `/ops/audit.json`, `/ops/audit.csv`; every sign-in,
 *   refusal, search, export and decision is a row of it (audit.ts).
 *
 * Who may call them: whoever the /ops access check lets in (access.ts, the one check every route here goes
 * through): a signed-in operator (name and password, a session cookie; changes carry its CSRF token), or to
 * read, Basic auth with an operator's name and password, and for the payments', statements' and audit's JSON and CSV also
 * `Authorization: Bearer <OPS_TOKEN>`; anyone else gets 401 (a browser: the sign-in form), an address with too
 * many failed sign-ins 429 for a while. Without OPS_USER and OPS_PASSWORD, everyone in the embedded demo
 * (`open`, operator `demo`) and nobody in production: the routes are not added at all (the app's 404), and
 * the start log says so.
 * The pages allow only their own scripts, styles and data (Content-Security-Policy), and are never framed.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Express, NextFunction, Request, Response } from 'express';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { EventsOutSchema } from '../events-out/schema.js';
import { setPageHeaders } from '../http/page-headers.js';
import type { Journal } from '../journal/journal.js';
import type { Logger } from '../log.js';
import type { Store } from '../store/types.js';
import { callerCountry, type CallerCountrySettings } from '../conversation/engine/country.js';
import type { OperatorAccounts } from '../people/operators.js';
import { opsAccess, SIGN_IN_LIMIT, type SignInLimit } from './access.js';
import { OperatorAudit } from './audit.js';
import type { Funnel } from './funnel.js';
import { CHANNELS } from './funnel.js';
import type { Metrics } from './metrics.js';
import { unavailable } from './html.js';
import { moneyReport } from './money.js';
import { addJournalRoute } from './journal-page.js';
import { addPaymentsRoutes } from './payments.js';
import { addReconciliationRoute } from './reconciliation.js';
import { addStatementRoutes } from './statements.js';
import { addPeopleRoutes, type PeoplePageOptions } from './people-page.js';
import { addDeliveriesRoutes, type DeliveriesRouteOptions } from './deliveries.js';
import { addAuditRoutes } from './audit-page.js';

export { SIGN_IN_LIMIT, type SignInLimit };

export interface OpsPageOptions {
  funnel: Funnel;
  metrics: Pick<Metrics, 'status'>;
  /** OPS_USER and OPS_PASSWORD: Basic auth on every /ops route. Unset: see `open`. */
  credentials?: { user: string; password: string };
  /** Serve /ops without credentials when none are set: only with the embedded sandbox (a demo). */
  open: boolean;
  /** Seconds between the page's refreshes. Default 15: fresh enough to watch, four small reads a minute. */
  refreshSeconds?: number;
  /** Failed sign-ins allowed per address before it is refused for a while. Default {@link SIGN_IN_LIMIT}. */
  signInLimit?: SignInLimit;
  /** OPS_TOKEN: scripts may read the payments' JSON and CSV with it as a Bearer token. */
  opsToken?: string;
  /** The journal the money pages read; unset, they answer 503. */
  journal?: Journal;
  /**
   * DEFAULT_COUNTRY and CHANNEL_COUNTRIES: a phone number searched without its country code is read in the
   * operator's country by the rule every reader of numbers uses (engine/country.ts callerCountry): an operator has
   * no number nor channel of their own, so DEFAULT_COUNTRY. Default UG.
   */
  country?: CallerCountrySettings;
  /** Clock for the money's days. Default now (tests pass their own). */
  now?: () => Date;
  logger?: Logger;
  /** Where sign-ins and sign-in tries are kept (Redis with REDIS_URL: every process sees them). Default: this process's memory. */
  store?: Store;
  /** The operators of the database (src/people/start.ts). Default: the OPS_USER operator alone. */
  operators?: () => Promise<OperatorAccounts | null>;
  /** The People page's directory; unset, the page is not served. */
  people?: PeoplePageOptions;
  /** Signed events out: the delivery log and its replays (deliveries.ts); unset, the log without endpoints. */
  deliveries?: DeliveriesRouteOptions;
  /** The operators' audit (audit.ts). Default: one over the journal's database; none without a journal. */
  audit?: OperatorAudit;
}

const here = dirname(fileURLToPath(import.meta.url));
const asset = (name: string) => readFileSync(join(here, 'page', name), 'utf8');
/** Chart.js's UMD build, from the package's own folder (its `exports` do not list the file). */
const chartJs = () =>
  readFileSync(join(dirname(createRequire(import.meta.url).resolve('chart.js')), 'chart.umd.min.js'), 'utf8');

/** Headers of every /ops answer: never cached by anyone, never sniffed, never framed. */
function securityHeaders(_req: Request, res: Response, next: NextFunction): void {
  setPageHeaders(res, "'self'");
  next();
}

/** Adds the /ops routes; false when they are not served (production with neither OPS_USER / OPS_PASSWORD nor OPS_TOKEN). */
export function addOpsPage(app: Express, options: OpsPageOptions): boolean {
  const audit = options.audit ?? (options.journal ? new OperatorAudit(options.journal.db, options.logger) : undefined);
  const access = opsAccess({ ...options, audit });
  if (!access) return false;

  const refresh = Math.max(5, Math.round(options.refreshSeconds ?? 15));
  const page = asset('index.html')
    .replace('{{REFRESH_SECONDS}}', String(refresh))
    .replace('{{JOURNAL}}', options.journal ? 'on' : 'off');
  const files: Record<string, { type: string; body: string }> = {
    'ops.js': { type: 'text/javascript; charset=utf-8', body: asset('ops.js') },
    'ops.css': { type: 'text/css; charset=utf-8', body: asset('ops.css') },
    'money.css': { type: 'text/css; charset=utf-8', body: asset('money.css') },
    'chart.umd.min.js': { type: 'text/javascript; charset=utf-8', body: chartJs() },
  };
  const daysKept = options.funnel.daysKept;
  // Each value given once (a repeated one arrives as a list and is refused), nothing else accepted.
  const query = z
    .object({
      days: z
        .string()
        .regex(/^\d{1,3}$/, 'a whole number')
        .optional()
        .transform((v) => (v === undefined ? Math.min(7, daysKept) : Number(v)))
        .pipe(z.number().min(1).max(daysKept)),
      channel: z.enum(CHANNELS).optional(),
    })
    .strict();

  app.use('/ops', securityHeaders);
  app.use('/ops', access.auditRefusals());
  access.addRoutes(app);
  app.use('/ops', access.guard());
  app.get('/ops', (_req, res) => {
    res.type('html').send(page);
  });
  for (const [name, file] of Object.entries(files)) {
    app.get(`/ops/${name}`, (_req, res) => {
      res.type(file.type).send(file.body);
    });
  }
  app.get('/ops/money.json', async (req, res) => {
    const parsed = query.safeParse(req.query);
    if (!parsed.success) {
      const reasons = parsed.error.issues.map((i) => `${i.path.join('.') || 'query'}: ${i.message}`);
      res.status(400).json({ detail: `days is 1 to ${daysKept}, channel one of ${CHANNELS.join(', ')}`, reasons });
      return;
    }
    if (!options.journal) {
      res.status(503).json({ detail: 'The journal is not open: no database.' });
      return;
    }
    try {
      const { days, channel } = parsed.data;
      res.json(await moneyReport(options.journal.db, { days, ...(channel ? { channel } : {}), now: options.now?.() }));
    } catch (err) {
      options.logger?.warn({ err }, 'ops: the money figures could not be read');
      res.status(503).json({ detail: unavailable('The journal could not be read') });
    }
  });
  app.get('/ops/funnel.json', async (req, res) => {
    const parsed = query.safeParse(req.query);
    if (!parsed.success) {
      const reasons = parsed.error.issues.map((i) => `${i.path.join('.') || 'query'}: ${i.message}`);
      res.status(400).json({ detail: `days is 1 to ${daysKept}, channel one of ${CHANNELS.join(', ')}`, reasons });
      return;
    }
    const { days, channel } = parsed.data;
    try {
      res.json(await options.funnel.report({ days, ...(channel ? { channel } : {}) }));
    } catch {
      // Redis away: the figures are there, just not reachable now.
      res.status(503).json({ detail: 'The funnel could not be read (Redis did not answer); try again shortly.' });
    }
  });
  app.get('/ops/status.json', async (_req, res, next) => {
    try {
      res.json({ at: new Date().toISOString(), ...(await options.metrics.status()) });
    } catch (err) {
      next(err);
    }
  });
  addPaymentsRoutes(app, {
    journal: options.journal,
    defaultCountry: callerCountry(undefined, undefined, options.country ?? { defaultCountry: 'UG' }),
    logger: options.logger,
    audit,
  });
  addAuditRoutes(app, { audit, logger: options.logger });
  addReconciliationRoute(app, access, {
    journal: options.journal,
    logger: options.logger,
    audit,
    dualControl: options.people?.dualControl,
  });
  addJournalRoute(app, { journal: options.journal, logger: options.logger });
  addStatementRoutes(app, { journal: options.journal, logger: options.logger, now: options.now, audit });
  if (options.people) addPeopleRoutes(app, access, { ...options.people, audit: options.people.audit ?? audit });
  addDeliveriesRoutes(app, access, {
    ...(options.deliveries ?? { endpoints: [], retryForMs: 72 * 3_600_000 }),
    db: options.journal?.db as Kysely<EventsOutSchema> | undefined,
    logger: options.logger,
    audit,
  });
  return true;
}
