/**
 * Nalo Solutions USSD ("USSD API DOCUMENTATION", Nalo's Postman collection 7705958). JSON request:
 * `USERID` (the id Nalo gives the integrator), `MSISDN`, `USERDATA` (the dial string first, then the latest
 * answer), `MSGTYPE` (true on the dial, false after), `NETWORK`, `SESSIONID`. JSON reply: `USERID`, `MSISDN`,
 * `MSG`, `MSGTYPE` (true keeps the session open, false ends it).
 */
import { z } from 'zod';
import { decodeWith, flag, id, text, type Codec } from './codec.js';

const schema = z.object({
  USERID: text.default(''),
  MSISDN: id,
  USERDATA: text.default(''),
  MSGTYPE: flag,
  NETWORK: text.optional(),
  SESSIONID: id,
});

export const nalo: Codec = {
  name: 'nalo',
  body: 'json',
  decode: (body) =>
    decodeWith(schema, body, (b) => ({
      sessionId: b.SESSIONID,
      phoneNumber: b.MSISDN,
      hop: { kind: 'latest', start: b.MSGTYPE, input: b.USERDATA },
      echo: { USERID: b.USERID, MSISDN: b.MSISDN },
    })),
  encode: (screen, request) => ({
    type: 'json',
    body: { USERID: request.echo.USERID, MSISDN: request.echo.MSISDN, MSG: screen.text, MSGTYPE: !screen.final },
  }),
};
