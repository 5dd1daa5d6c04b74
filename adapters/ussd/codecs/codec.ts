/**
 * One codec per USSD gateway: its request body -> GatewayRequest, and a screen -> its reply body.
 * Codecs are pure and know nothing of sessions, the engine or the store.
 */
import { z } from 'zod';

export type GatewayName = 'africastalking' | 'hubtel' | 'arkesel' | 'nalo' | 'beem';

/** What one request says about the session, whatever the wire format. */
export type Hop =
  /** Africa's Talking: every answer so far joined by `*` (empty on the dial). */
  | { kind: 'cumulative'; text: string }
  /** Gateways that send only the latest answer; `sequence` when the gateway numbers its requests (dial = 0). */
  | { kind: 'latest'; start: boolean; input: string; sequence?: number }
  /** The gateway reports that the session is over (user released, timeout). */
  | { kind: 'end' };

export interface GatewayRequest {
  sessionId: string;
  /** The number as the gateway sent it (normalised by the router). */
  phoneNumber: string;
  hop: Hop;
  /** The service code the request names, when the gateway sends one (dial strings: dial-string.ts). */
  serviceCode?: string;
  /** Request fields the reply must echo (Arkesel userID, Beem operator, ...). */
  echo: Record<string, string>;
}

/** The screen a reply carries, and the hop it answers (Beem numbers its requests with it). */
export interface ReplyScreen {
  text: string;
  final: boolean;
  hop: number;
}

export type GatewayReply = { type: 'text'; body: string } | { type: 'json'; body: Record<string, unknown> };

export type Decoded = { ok: true; request: GatewayRequest } | { ok: false; reason: string };

export interface Codec {
  name: GatewayName;
  /** How the body arrives: form fields or JSON. */
  body: 'form' | 'json';
  decode(body: unknown): Decoded;
  encode(screen: ReplyScreen, request: GatewayRequest): GatewayReply;
}

/** A non-empty string field; numbers are accepted (some gateways send ids and MSISDNs as numbers). */
export const id = z.union([z.string(), z.number()]).transform(String).pipe(z.string().trim().min(1));
/** A possibly empty text field. */
export const text = z.union([z.string(), z.number()]).transform(String);
/** A boolean that may arrive as "true"/"false". */
export const flag = z
  .union([z.boolean(), z.enum(['true', 'false', 'TRUE', 'FALSE', 'True', 'False'])])
  .transform((v) => v === true || (typeof v === 'string' && v.toLowerCase() === 'true'));

/** Parses with `schema`; the reason names fields and problems, never values (bodies can carry PINs). */
export function decodeWith<S extends z.ZodType>(
  schema: S,
  body: unknown,
  map: (parsed: z.output<S>) => GatewayRequest,
): Decoded {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return { ok: false, reason: 'expected a body of named fields' };
  }
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    const reason = parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ');
    return { ok: false, reason };
  }
  return { ok: true, request: map(parsed.data) };
}
