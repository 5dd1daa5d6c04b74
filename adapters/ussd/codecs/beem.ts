/**
 * Beem Africa USSD hub (https://docs.beem.africa/ussd/). JSON request: `command` (initiate | continue |
 * terminate), `msisdn`, `session_id`, `operator`, `payload: { request_id, response }` where `response` is the
 * latest answer and `request_id` the id of the screen it answers. JSON reply: `msisdn`, `operator`,
 * `session_id`, `command` (continue | terminate), `payload: { request_id, request }` with `request` the screen.
 * We number screens by hop, so a continue carrying an already answered request_id is a resend.
 */
import { z } from 'zod';
import { decodeWith, id, text, type Codec } from './codec.js';

const schema = z.object({
  command: z
    .string()
    .transform((c) => c.toLowerCase())
    .pipe(z.enum(['initiate', 'continue', 'terminate'])),
  msisdn: id,
  session_id: id,
  operator: text.default(''),
  payload: z
    .object({
      request_id: z.coerce.number().int().nonnegative().optional(),
      response: text.default(''),
    })
    .default({ response: '' }),
});

export const beem: Codec = {
  name: 'beem',
  body: 'json',
  decode: (body) =>
    decodeWith(schema, body, (b) => ({
      sessionId: b.session_id,
      phoneNumber: b.msisdn,
      hop:
        b.command === 'terminate'
          ? { kind: 'end' }
          : {
              kind: 'latest',
              start: b.command === 'initiate',
              input: b.payload.response,
              ...(b.command === 'continue' && b.payload.request_id !== undefined
                ? { sequence: b.payload.request_id }
                : {}),
            },
      echo: { msisdn: b.msisdn, operator: b.operator, session_id: b.session_id },
    })),
  encode: (screen, request) => ({
    type: 'json',
    body: {
      msisdn: request.echo.msisdn,
      operator: request.echo.operator,
      session_id: request.echo.session_id,
      command: screen.final ? 'terminate' : 'continue',
      payload: { request_id: screen.hop + 1, request: screen.text },
    },
  }),
};
