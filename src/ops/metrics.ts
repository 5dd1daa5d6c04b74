/**
 * Prometheus metrics (prom-client) on their own registry: requests and latency per channel, conversations
 * finished and abandoned per flow and step, notification queue depth, the service's 429s and errors, and
 * WhatsApp's messages (sent, failed for good, held outside the 24-hour window) and status callbacks.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface Metrics {
  registry: Registry;
  /**
   * Middleware timing every request, labelled by channel (the path's first segment); on Node's own request and
   * response, so it serves express and the direct routes (src/http/direct-routes.ts) alike.
   */
  http(req: IncomingMessage, res: ServerResponse, next: () => void): void;
  /** Wraps fetch so every answer of the service is counted by status (429s and 5xx included). */
  countingFetch(inner?: typeof fetch): typeof fetch;
  conversationFinished(flow: string, outcome: 'finished' | 'abandoned', step: string): void;
  /** Reads the queue depth at scrape time. */
  trackQueueDepth(read: () => Promise<number>): void;
  /** WhatsApp messages by kind (text, interactive, template, read) and outcome, and status callbacks by status. */
  whatsapp: { message(kind: string, outcome: 'sent' | 'failed' | 'held'): void; status(status: string): void };
  /** The figures the operator page shows (/ops/status.json), read from this registry. */
  status(): Promise<ServiceStatus>;
}

/** The notification queue and the service's answers, as this process counted them since it started. */
export interface ServiceStatus {
  /** Notifications waiting or being worked now; null when unknown (no queue, or it could not be read). */
  queueDepth: number | null;
  service: {
    /** Answers of the service by HTTP status; `0` is no answer (connection failed). */
    byStatus: Record<string, number>;
    total: number;
    /** 429 Too Many Requests. */
    rateLimited: number;
    /** 5xx answers and no answer at all. */
    errors: number;
  };
}

/** A request's channel by its path's first segment (a Map: the path is anyone's, `/constructor` included). */
const CHANNEL_BY_PREFIX: ReadonlyMap<string, string> = new Map(
  Object.entries({
    ussd: 'ussd',
    simulator: 'ussd',
    telegram: 'telegram',
    slack: 'slack',
    whatsapp: 'whatsapp',
    notifications: 'notifications',
    api: 'sandbox',
    vending: 'sandbox',
    sandbox: 'sandbox',
  }),
);

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: 'momo_http_requests_total',
    help: 'HTTP requests by channel and status class',
    labelNames: ['channel', 'status'] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'momo_http_request_duration_seconds',
    help: 'HTTP request latency by channel',
    labelNames: ['channel'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const conversations = new Counter({
    name: 'momo_conversations_total',
    help: 'Conversations that reached a final step (finished) or were left (abandoned), per flow and step',
    labelNames: ['flow', 'outcome', 'step'] as const,
    registers: [registry],
  });
  const upstream = new Counter({
    name: 'momo_service_responses_total',
    help: 'Answers of the mobile-money service by status (0 = no answer)',
    labelNames: ['status'] as const,
    registers: [registry],
  });
  const whatsappMessages = new Counter({
    name: 'momo_whatsapp_messages_total',
    help: 'WhatsApp messages by kind and outcome (sent; failed after retries; held: outside the 24-hour window without a template)',
    labelNames: ['kind', 'outcome'] as const,
    registers: [registry],
  });
  const whatsappStatuses = new Counter({
    name: 'momo_whatsapp_statuses_total',
    help: 'WhatsApp status callbacks by status (sent, delivered, read, failed, ...)',
    labelNames: ['status'] as const,
    registers: [registry],
  });
  let depthReader: (() => Promise<number>) | undefined;
  const depth = new Gauge({
    name: 'momo_notification_queue_depth',
    help: 'Notifications waiting or being worked',
    registers: [registry],
    async collect() {
      if (depthReader) this.set(await depthReader().catch(() => -1));
    },
  });

  return {
    registry,
    http(req, res, next) {
      const channel = CHANNEL_BY_PREFIX.get((req.url ?? '').split(/[/?]/)[1] ?? '') ?? 'other';
      const end = latency.startTimer({ channel });
      res.on('finish', () => {
        end();
        requests.inc({ channel, status: `${Math.floor(res.statusCode / 100)}xx` });
      });
      next();
    },
    countingFetch(inner = fetch) {
      return async (input, init) => {
        try {
          const res = await inner(input, init);
          upstream.inc({ status: String(res.status) });
          return res;
        } catch (err) {
          upstream.inc({ status: '0' });
          throw err;
        }
      };
    },
    conversationFinished(flow, outcome, step) {
      conversations.inc({ flow, outcome, step });
    },
    trackQueueDepth(read) {
      depthReader = read;
    },
    whatsapp: {
      message: (kind, outcome) => whatsappMessages.inc({ kind, outcome }),
      status: (status) => whatsappStatuses.inc({ status }),
    },
    async status() {
      const queued = depthReader ? (await depth.get()).values[0]?.value : undefined;
      const byStatus: Record<string, number> = {};
      for (const { labels, value } of (await upstream.get()).values) byStatus[String(labels.status)] = value;
      const count = (keep: (status: number) => boolean) =>
        Object.entries(byStatus).reduce((total, [status, n]) => total + (keep(Number(status)) ? n : 0), 0);
      return {
        queueDepth: queued === undefined || queued < 0 ? null : queued,
        service: {
          byStatus,
          total: count(() => true),
          rateLimited: count((s) => s === 429),
          errors: count((s) => s === 0 || s >= 500),
        },
      };
    },
  };
}
