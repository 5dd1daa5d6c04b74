/**
 * Hubtel Programmable Services (https://developers.hubtel.com/docs/api-reference-prog-services).
 * JSON request: `Type` (initiation | response | release | timeout; lower case, any case accepted),
 * `Mobile`, `SessionId`, `ServiceCode`, `Message` (the dial string on initiation, then the latest answer),
 * `Operator`, `Sequence` (1 on initiation), `ClientState`. JSON reply: `SessionId`, `Type`
 * (response | release), `Message`, `Label`, `DataType`, `FieldType`. Release and timeout end the session.
 */
import { z } from 'zod';
import { decodeWith, id, text, type Codec } from './codec.js';

const schema = z.object({
  Type: z
    .string()
    .transform((t) => t.toLowerCase())
    .pipe(z.enum(['initiation', 'response', 'release', 'timeout'])),
  SessionId: id,
  Mobile: id,
  Message: text.default(''),
  ServiceCode: text.optional(),
  Sequence: z.coerce.number().int().positive().optional(),
});

export const hubtel: Codec = {
  name: 'hubtel',
  body: 'json',
  decode: (body) =>
    decodeWith(schema, body, (b) => ({
      sessionId: b.SessionId,
      phoneNumber: b.Mobile,
      hop:
        b.Type === 'release' || b.Type === 'timeout'
          ? { kind: 'end' }
          : {
              kind: 'latest',
              start: b.Type === 'initiation',
              input: b.Message,
              ...(b.Sequence === undefined ? {} : { sequence: b.Sequence - 1 }),
            },
      ...(b.ServiceCode ? { serviceCode: b.ServiceCode } : {}),
      echo: { SessionId: b.SessionId },
    })),
  encode: (screen, request) => ({
    type: 'json',
    body: {
      SessionId: request.echo.SessionId,
      Type: screen.final ? 'release' : 'response',
      Message: screen.text,
      Label: screen.text.split('\n')[0] ?? '',
      DataType: screen.final ? 'display' : 'input',
      FieldType: 'text',
    },
  }),
};
