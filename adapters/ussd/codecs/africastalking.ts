/**
 * Africa's Talking. Form fields `sessionId, serviceCode, phoneNumber, networkCode, text`, where `text` is
 * every answer of the session joined by `*` (empty on the dial). The reply is text/plain beginning
 * `CON ` (wait for an answer) or `END ` (session over).
 */
import { z } from 'zod';
import { decodeWith, id, text, type Codec } from './codec.js';

const schema = z.object({
  sessionId: id,
  phoneNumber: id,
  serviceCode: text.optional(),
  networkCode: text.optional(),
  text: text.default(''),
});

export const africastalking: Codec = {
  name: 'africastalking',
  body: 'form',
  decode: (body) =>
    decodeWith(schema, body, (b) => ({
      sessionId: b.sessionId,
      phoneNumber: b.phoneNumber,
      hop: { kind: 'cumulative', text: b.text },
      echo: {},
    })),
  encode: (screen) => ({ type: 'text', body: `${screen.final ? 'END' : 'CON'} ${screen.text}` }),
};
