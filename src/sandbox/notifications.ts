/**
 * Events and their webhook notifications. Every event is recorded (readable at /api/events) and POSTed
 * as `{hook, data}` to each webhook of its organization and type:
 * - 5 s to answer; 2xx acknowledges; 410 deletes the webhook; anything else (or no answer) is retried,
 *   10 attempts in all, waiting RETRY_WAITS_SECONDS[n] of sandbox time after attempt n (10 s doubling,
 *   capped at one hour: about 85 minutes from the first to the last attempt; the spec does not show the
 *   waits);
 * - a target whose certificate fails validation is not sent (the spec: "when validation fails the
 *   notification is not sent") and not retried: outcome `certificate_rejected`;
 * - `Authorization: Basic ...` when the organization has webhook credentials;
 * - every attempt lands in the delivery log (controls.deliveries(), GET /sandbox/deliveries) with its status
 *   and timing, never the answer's body;
 * - private, link-local and other internal addresses are never called (outbound.ts).
 */
import type { Logger } from 'pino';
import type { SandboxClock } from './clock.js';
import { basicAuthHeaders, isCertificateError, postJson } from './outbound.js';
import { timestamp, type Renderer } from './render.js';
import type { EventType, SandboxEvent, SandboxState, Webhook } from './state.js';

const DELIVERY_ATTEMPTS = 10;
const DELIVERY_TIMEOUT_MS = 5000;
export const RETRY_WAITS_SECONDS = Array.from({ length: DELIVERY_ATTEMPTS - 1 }, (_, i) => Math.min(10 * 2 ** i, 3600));

export interface DeliveryRecord {
  id: number;
  event: number;
  event_type: EventType;
  webhook: number;
  target: string;
  attempt: number;
  /** Sandbox time of the attempt. */
  at: string;
  /** HTTP status of the answer; null when none arrived. */
  status: number | null;
  /** How long the attempt took, in ms of wall time (the answer's body is not kept: it is the target's business). */
  duration_ms: number;
  error: string | null;
  outcome: 'delivered' | 'retry_scheduled' | 'failed' | 'webhook_deleted' | 'certificate_rejected';
}

export class Notifications {
  readonly deliveries: DeliveryRecord[] = [];

  constructor(
    private readonly state: SandboxState,
    private readonly clock: SandboxClock,
    private readonly render: Renderer,
    private readonly log: Logger,
  ) {}

  /** Records an event of the organization and notifies its webhooks of that type. */
  emit(organization: number, type: EventType, data: unknown): SandboxEvent {
    const event: SandboxEvent = { id: this.state.nextId('event'), organization, type, data, created: this.clock.now() };
    this.state.events.set(event.id, event);
    for (const hook of this.state.webhooks.values()) {
      if (hook.organization !== organization || hook.event !== type) continue;
      this.attempt(event, hook, 1).catch((err: unknown) =>
        this.log.error({ err, webhook: hook.id }, 'sandbox webhook delivery failed'),
      );
    }
    return event;
  }

  private attempt(event: SandboxEvent, hook: Webhook, attempt: number): Promise<void> {
    if (!this.state.webhooks.has(hook.id)) return Promise.resolve();
    const headers = basicAuthHeaders(this.state.organizations.get(hook.organization)?.webhookAuth);
    const at = timestamp(this.clock.now());
    const started = performance.now();
    const work = postJson(
      hook.target,
      { hook: this.render.webhook(hook), data: event.data },
      { timeoutMs: DELIVERY_TIMEOUT_MS, headers },
    ).then(
      (res) => ({ status: res.status, error: null, certificate: false }),
      (err: Error) => ({ status: null, error: err.message, certificate: isCertificateError(err) }),
    );
    return this.clock.track(work).then(({ status, error, certificate }) => {
      const duration_ms = Math.round(performance.now() - started);
      const delivered = status !== null && status >= 200 && status < 300;
      let outcome: DeliveryRecord['outcome'];
      if (delivered) outcome = 'delivered';
      else if (certificate) outcome = 'certificate_rejected';
      else if (status === 410) {
        this.state.webhooks.delete(hook.id);
        outcome = 'webhook_deleted';
      } else if (attempt < DELIVERY_ATTEMPTS) {
        this.clock.schedule(RETRY_WAITS_SECONDS[attempt - 1]!, () => this.attempt(event, hook, attempt + 1));
        outcome = 'retry_scheduled';
      } else outcome = 'failed';
      this.deliveries.push({
        id: this.deliveries.length + 1,
        event: event.id,
        event_type: event.type,
        webhook: hook.id,
        target: hook.target,
        attempt,
        at,
        status,
        duration_ms,
        error: error ?? (delivered || status === 410 ? null : `HTTP ${status}`),
        outcome,
      });
      this.log.debug({ event: event.id, webhook: hook.id, attempt, status, outcome }, 'sandbox webhook notification');
    });
  }
}
