/**
 * The one client of Meta's Graph API the channel uses: `POST {apiUrl}/{phoneNumberId}/messages` with
 * `Authorization: Bearer {token}`, for replies, notifications, templates and read receipts.
 *
 * Failures keep "Meta said no" (GraphApiError: an HTTP status and the Graph error's `code`) apart from "no
 * answer" (GraphConnectionError). One decision function, {@link retryDelay}, says what is repeated: 429 and
 * 5xx answers, the Cloud API's throttling and temporary codes (whatever HTTP status they come with: Meta
 * sends most with 400), and no answer at all; with exponential backoff (jittered, capped) or the
 * Retry-After Meta sent. Anything else (a bad parameter, an expired token, a closed 24-hour window) is
 * final. A send that fails for good is logged (the number masked) and counted, then thrown to the caller.
 *
 * The Graph API has no idempotency key: a send repeated after a 5xx or a lost answer can show a message
 * twice. That is a chat message, never money, and it beats losing one.
 */
import { z } from 'zod';
import { maskPhone, type Logger } from '../../src/log.js';

/**
 * Graph API version the product speaks, pinned so a new version's changes arrive when we choose:
 * v24.0 (October 2025), supported by Meta until at least October 2027. WHATSAPP_API_URL overrides it.
 */
export const GRAPH_API_URL = 'https://graph.facebook.com/v24.0';

/** Cloud API error codes worth repeating (Meta's error code reference): throttling and temporary failures. */
const RETRYABLE_CODES: ReadonlySet<number> = new Set([
  2, // API Service: temporary downtime or overload
  4, // API Too Many Calls: the app's call rate limit
  80007, // the WhatsApp Business Account's rate limit
  130429, // Cloud API throughput reached
  131000, // Something went wrong
  131016, // Service unavailable
  131056, // pair rate limit: too many messages to one user in a short time
  133004, // server temporarily unavailable
]);

/** The Cloud API's answer when a free-form message is sent outside the user's 24-hour window. */
export const REENGAGEMENT_CODE = 131047;

export interface RetryOptions {
  /** Retries after the first attempt. Default 3: a burst or a blip passes, an outage surfaces in seconds. */
  maxRetries?: number;
  /** First backoff in ms, doubled on each retry. Default 500. */
  baseDelayMs?: number;
  /** Longest backoff in ms. Default 8000: a chat user is waiting for the answer. */
  maxDelayMs?: number;
  /** Longest Retry-After worth waiting, in seconds. Default 30; longer is given up (the caller hears at once). */
  maxRetryAfterSeconds?: number;
  /** How to wait. Default a timer; tests record the waits instead. */
  sleep?: (ms: number) => Promise<void>;
  /** Jitter source in [0, 1): the backoff is between half and all of its value. Default Math.random. */
  random?: () => number;
}

/** What went wrong with one call: Meta answered with an error, or no answer came. */
export type CallFailure =
  { kind: 'api'; status: number; code?: number; retryAfterSeconds?: number } | { kind: 'network' };

type Settings = Required<Omit<RetryOptions, 'sleep'>>;

const DEFAULTS: Settings = {
  maxRetries: 3,
  baseDelayMs: 500,
  maxDelayMs: 8000,
  maxRetryAfterSeconds: 30,
  random: Math.random,
};

/** True for a failure that may pass if the call is repeated: no answer, 429, 5xx, a throttling or temporary code. */
export function isTemporary(failure: CallFailure): boolean {
  if (failure.kind === 'network') return true;
  return (
    failure.status === 429 || failure.status >= 500 || (failure.code !== undefined && RETRYABLE_CODES.has(failure.code))
  );
}

/** The one retry decision: ms to wait before retry number `retry` (0 for the first), or null to give up. */
export function retryDelay(failure: CallFailure, retry: number, settings: Settings = DEFAULTS): number | null {
  if (retry >= settings.maxRetries || !isTemporary(failure)) return null;
  const backoff = Math.min(settings.baseDelayMs * 2 ** retry, settings.maxDelayMs);
  const jittered = Math.round(backoff / 2 + (settings.random() * backoff) / 2);
  if (failure.kind === 'network' || failure.retryAfterSeconds === undefined) return jittered;
  return failure.retryAfterSeconds <= settings.maxRetryAfterSeconds ? failure.retryAfterSeconds * 1000 : null;
}

/** Meta answered with an error. `code` is the Graph error's code (build on it, not on the HTTP status). */
export class GraphApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: number | undefined,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'GraphApiError';
  }

  /** Meta refused the message for good: sending it again as it is would be refused again. */
  get final(): boolean {
    return !isTemporary({ kind: 'api', status: this.status, code: this.code });
  }
}

/** No answer: the connection failed or the call timed out. Whether Meta acted on it is unknown. */
export class GraphConnectionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GraphConnectionError';
  }
}

const errorBody = z.object({
  error: z.object({
    message: z.string().max(2000).optional(),
    code: z.number().int().optional(),
    error_data: z.object({ details: z.string().max(2000).optional() }).optional(),
  }),
});
const sentBody = z.object({ messages: z.array(z.object({ id: z.string().max(256) })).min(1) });

/** A message's content as the Graph API takes it, without the envelope (`messaging_product`, `to`...). */
export type OutboundMessage =
  | { type: 'text'; text: { body: string; preview_url: boolean } }
  | { type: 'interactive'; interactive: Record<string, unknown> }
  | { type: 'template'; template: { name: string; language: { code: string }; components: unknown[] } };

/** What is counted: every message by kind (text, interactive, template, read) and what became of it. */
export interface MessageCounter {
  /** `held`: an outcome kept for the user's next message (the 24-hour window closed, no template). */
  message(kind: string, outcome: 'sent' | 'failed' | 'held'): void;
}

export interface GraphApiOptions {
  /** Graph API base with its version. Default {@link GRAPH_API_URL}. */
  apiUrl?: string;
  /** The business phone number's id (digits): messages are sent from it. */
  phoneNumberId: string;
  /** The system user's permanent access token (WHATSAPP_TOKEN). Never logged. */
  token: string;
  retry?: RetryOptions;
  /** Longest wait for one answer, in ms. Default 10000: past it the call counts as unanswered (and is retried). */
  timeoutMs?: number;
  counter?: MessageCounter;
  logger: Logger;
}

export interface GraphApi {
  /** Sends a message to a user (their wa_id); resolves to its wamid when Meta gave one. */
  send(to: string, message: OutboundMessage): Promise<string | undefined>;
  /** Marks a user's message read (blue ticks). */
  markRead(messageId: string): Promise<void>;
}

const timer = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The failure of an answer that is not 2xx, read from the Graph error body when there is one. */
async function failureOf(response: Response): Promise<GraphApiError> {
  const text = await response.text().catch(() => '');
  let parsed: z.infer<typeof errorBody> | undefined;
  try {
    parsed = errorBody.safeParse(JSON.parse(text)).data;
  } catch {
    parsed = undefined;
  }
  const header = response.headers.get('retry-after');
  const retryAfter = header !== null && /^\d{1,6}$/.test(header.trim()) ? Number(header) : undefined;
  const { code, message, error_data } = parsed?.error ?? {};
  const detail = [message, error_data?.details].filter(Boolean).join(': ') || `HTTP ${response.status}`;
  return new GraphApiError(response.status, code, detail, retryAfter);
}

export function createGraphApi(options: GraphApiOptions): GraphApi {
  const { phoneNumberId, token, logger, counter } = options;
  const { sleep = timer, ...given } = options.retry ?? {};
  const settings: Settings = { ...DEFAULTS, ...given };
  const url = `${(options.apiUrl ?? GRAPH_API_URL).replace(/\/+$/, '')}/${phoneNumberId}/messages`;
  const timeoutMs = options.timeoutMs ?? 10_000;

  /** One call, repeated as retryDelay says; resolves to the answer's body. */
  async function call(body: Record<string, unknown>): Promise<unknown> {
    const init = {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    };
    for (let retry = 0; ; retry++) {
      let error: GraphApiError | GraphConnectionError;
      let failure: CallFailure;
      try {
        const response = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
        if (response.ok) return await response.json().catch(() => undefined);
        const refused = await failureOf(response);
        error = refused;
        failure = {
          kind: 'api',
          status: refused.status,
          code: refused.code,
          retryAfterSeconds: refused.retryAfterSeconds,
        };
      } catch (thrown) {
        error = new GraphConnectionError(thrown instanceof Error ? thrown.message : String(thrown));
        failure = { kind: 'network' };
      }
      const delay = retryDelay(failure, retry, settings);
      if (delay === null) throw error;
      await sleep(delay);
    }
  }

  /** A call whose failure for good is logged and counted before it is thrown. */
  async function counted(kind: string, to: string | undefined, body: Record<string, unknown>): Promise<unknown> {
    try {
      const answer = await call(body);
      counter?.message(kind, 'sent');
      return answer;
    } catch (error) {
      counter?.message(kind, 'failed');
      const { status, code } = error instanceof GraphApiError ? error : { status: undefined, code: undefined };
      // Meta's words can quote a number; a log shows none in full.
      const err = (error as Error).message.replace(/\+?\d{7,}/g, (digits) => maskPhone(digits));
      logger.error({ kind, to: to && maskPhone(to), status, code, err }, 'whatsapp: message not sent');
      throw error;
    }
  }

  return {
    async send(to, message) {
      const answer = await counted(message.type, to, {
        messaging_product: 'whatsapp',
        recipient_type: 'individual',
        to,
        ...message,
      });
      return sentBody.safeParse(answer).data?.messages[0]?.id;
    },
    async markRead(messageId) {
      await counted('read', undefined, { messaging_product: 'whatsapp', status: 'read', message_id: messageId });
    },
  };
}
