/**
 * Arkesel USSD. JSON request: `sessionID`, `userID` (the application's id), `newSession` (true on the dial),
 * `msisdn`, `userData` (the dial string on the dial, then the latest answer), `network`. JSON reply:
 * `sessionID`, `userID`, `msisdn`, `message`, `continueSession` (false ends the session).
 * Field names as in Arkesel's documentation examples (e.g. the request sample `{"sessionID":
 * "2005506191900168", "userID": "USSD_DOCUMENTATION", "newSession": true, "msisdn": "233271231234",
 * "userData": "*928*1#", "network": "AIRTELTIGO"}` quoted in public integrations).
 */
import { z } from 'zod';
import { decodeWith, flag, id, text, type Codec } from './codec.js';

const schema = z.object({
  sessionID: id,
  userID: text.default(''),
  newSession: flag,
  msisdn: id,
  userData: text.default(''),
  network: text.optional(),
});

export const arkesel: Codec = {
  name: 'arkesel',
  body: 'json',
  decode: (body) =>
    decodeWith(schema, body, (b) => ({
      sessionId: b.sessionID,
      phoneNumber: b.msisdn,
      hop: { kind: 'latest', start: b.newSession, input: b.userData },
      echo: { sessionID: b.sessionID, userID: b.userID, msisdn: b.msisdn },
    })),
  encode: (screen, request) => ({
    type: 'json',
    body: {
      sessionID: request.echo.sessionID,
      userID: request.echo.userID,
      msisdn: request.echo.msisdn,
      message: screen.text,
      continueSession: !screen.final,
    },
  }),
};
