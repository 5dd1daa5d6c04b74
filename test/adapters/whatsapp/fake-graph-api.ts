/**
 * A local Graph API server for tests: `POST /{version}/{phone-number-id}/messages` over real HTTP (express on
 * port 0), checking the bearer token and every message against the Cloud API's documented format and
 * limits (a message out of them is refused with Meta's 400 / code 100, so a test sending one fails), and
 * recording what was sent. Sent messages get wamids `wamid.TEST1`, `wamid.TEST2`, ... Failures are scripted.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import { z } from 'zod';

export const TOKEN = 'EAAG-test-permanent-token-never-logged';
export const PHONE_NUMBER_ID = '106540352242922';
export const VERSION = 'v24.0';

const chars = (min: number, max: number) =>
  z.string().refine((s) => Array.from(s).length >= min && Array.from(s).length <= max, `${min} to ${max} characters`);
const replyId = (max: number) => chars(1, max).refine((s) => s === s.trim(), 'no leading or trailing spaces');
const footer = z
  .object({ text: chars(1, 60) })
  .strict()
  .optional();

const buttons = z
  .object({
    type: z.literal('button'),
    body: z.object({ text: chars(1, 1024) }).strict(),
    footer,
    action: z
      .object({
        buttons: z
          .array(
            z
              .object({ type: z.literal('reply'), reply: z.object({ id: replyId(256), title: chars(1, 20) }).strict() })
              .strict(),
          )
          .min(1)
          .max(3),
      })
      .strict(),
  })
  .strict()
  .refine(
    (m) => new Set(m.action.buttons.map((b) => b.reply.title)).size === m.action.buttons.length,
    'button titles must be unique',
  )
  .refine(
    (m) => new Set(m.action.buttons.map((b) => b.reply.id)).size === m.action.buttons.length,
    'button ids must be unique',
  );

const list = z
  .object({
    type: z.literal('list'),
    body: z.object({ text: chars(1, 4096) }).strict(),
    footer,
    action: z
      .object({
        button: chars(1, 20),
        sections: z
          .array(
            z
              .object({
                title: chars(1, 24).optional(),
                rows: z
                  .array(
                    z.object({ id: replyId(200), title: chars(1, 24), description: chars(1, 72).optional() }).strict(),
                  )
                  .min(1),
              })
              .strict(),
          )
          .min(1)
          .max(10),
      })
      .strict(),
  })
  .strict()
  .refine((m) => m.action.sections.flatMap((s) => s.rows).length <= 10, 'at most 10 rows in all sections')
  .refine(
    (m) => m.action.sections.length === 1 || m.action.sections.every((s) => s.title),
    'section titles are required with several sections',
  )
  .refine((m) => {
    const ids = m.action.sections.flatMap((s) => s.rows.map((r) => r.id));
    return new Set(ids).size === ids.length;
  }, 'row ids must be unique');

const parameterText = chars(1, 32_768).refine(
  (s) => !/[\n\t]| {5,}/.test(s),
  'no new-line or tab characters or more than 4 consecutive spaces',
);

const envelope = {
  messaging_product: z.literal('whatsapp'),
  recipient_type: z.literal('individual'),
  to: z.string().regex(/^\d{6,20}$/),
};
const message = z.union([
  z
    .object({
      ...envelope,
      type: z.literal('text'),
      text: z.object({ body: chars(1, 4096), preview_url: z.boolean().optional() }).strict(),
    })
    .strict(),
  z.object({ ...envelope, type: z.literal('interactive'), interactive: z.union([buttons, list]) }).strict(),
  z
    .object({
      ...envelope,
      type: z.literal('template'),
      template: z
        .object({
          name: z.string().regex(/^[a-z0-9_]{1,512}$/),
          language: z.object({ code: z.string().min(2) }).strict(),
          components: z
            .array(
              z
                .object({
                  type: z.literal('body'),
                  parameters: z.array(z.object({ type: z.literal('text'), text: parameterText }).strict()),
                })
                .strict(),
            )
            .optional(),
        })
        .strict(),
    })
    .strict(),
  z
    .object({ messaging_product: z.literal('whatsapp'), status: z.literal('read'), message_id: z.string().min(1) })
    .strict(),
]);

/** Why Meta would refuse this request body (the documented format and limits), or null when it fits. */
export function wireProblem(body: unknown): string | null {
  const parsed = message.safeParse(body);
  return parsed.success ? null : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
}

export type SentMessage = Record<string, any> & { wamid: string };

interface Scripted {
  status: number;
  body: unknown;
  headers: Record<string, string>;
}

export interface FakeGraphApi {
  /** The WHATSAPP_API_URL of this server (with its version). */
  apiUrl: string;
  /** Every accepted message (read receipts included), in order, with the wamid it was given. */
  sent: SentMessage[];
  /** Requests refused (bad token, bad format, scripted failures), with the reason. */
  refused: Array<{ status: number; body: unknown; reason: string }>;
  /** Accepted messages to one user, read receipts left out. */
  to(waId: string): SentMessage[];
  /** Answers the next `times` requests with this status, body and headers instead of accepting them. */
  failNext(status: number, body: unknown, options?: { times?: number; headers?: Record<string, string> }): void;
  /** Resolves once `count` messages to `waId` have been accepted. */
  waitFor(waId: string, count: number): Promise<SentMessage[]>;
  close(): Promise<void>;
}

/** Meta's error body. */
export const graphError = (code: number, message: string) => ({
  error: {
    message,
    type: 'OAuthException',
    code,
    error_data: { messaging_product: 'whatsapp', details: message },
    fbtrace_id: 'AbCdEf',
  },
});

export async function startFakeGraphApi(): Promise<FakeGraphApi> {
  const sent: SentMessage[] = [];
  const refused: FakeGraphApi['refused'] = [];
  const scripted: Scripted[] = [];
  let waiters: Array<() => void> = [];
  let next = 1;
  const to = (waId: string) => sent.filter((m) => m.to === waId);

  const app = express();
  app.post('/:version/:phoneNumberId/messages', express.json({ limit: '1mb' }), (req, res) => {
    const refuse = (status: number, body: unknown, reason: string) => {
      refused.push({ status, body: req.body, reason });
      res.status(status).json(body);
    };
    if (req.headers.authorization !== `Bearer ${TOKEN}`)
      return refuse(401, graphError(190, 'Invalid OAuth access token - Cannot parse access token'), 'bad token');
    if (req.params.version !== VERSION || req.params.phoneNumberId !== PHONE_NUMBER_ID) {
      return refuse(400, graphError(100, 'Unsupported post request'), `unknown path ${req.path}`);
    }
    const problem = wireProblem(req.body);
    if (problem) return refuse(400, graphError(100, `Invalid parameter: ${problem}`), problem);
    const failure = scripted.shift();
    if (failure) {
      res.set(failure.headers);
      return refuse(failure.status, failure.body, 'scripted');
    }
    const wamid = `wamid.TEST${next++}`;
    sent.push({ ...(req.body as Record<string, unknown>), wamid });
    for (const wake of waiters) wake();
    if ((req.body as { status?: string }).status === 'read') return res.json({ success: true });
    const recipient = String((req.body as { to: string }).to);
    res.json({
      messaging_product: 'whatsapp',
      contacts: [{ input: recipient, wa_id: recipient }],
      messages: [{ id: wamid }],
    });
  });

  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;

  return {
    apiUrl: `http://127.0.0.1:${port}/${VERSION}`,
    sent,
    refused,
    to,
    failNext(status, body, options = {}) {
      for (let i = 0; i < (options.times ?? 1); i++) scripted.push({ status, body, headers: options.headers ?? {} });
    },
    waitFor(waId, count) {
      return new Promise((resolve) => {
        const check = () => {
          if (to(waId).length < count) return;
          waiters = waiters.filter((w) => w !== check);
          resolve(to(waId));
        };
        waiters.push(check);
        check();
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((e) => (e ? reject(e) : resolve())));
    },
  };
}
