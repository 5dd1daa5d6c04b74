/**
 * Store keys shared between the conversation layer (which writes them) and the notifications layer
 * (which reads them).
 */
import { Decimal } from 'decimal.js';

/** An open collection request made here, kept until it expires (24 h by default at the service). */
export function openRequestKey(phonenumber: string, amount: string, currency: string): string {
  return `openreq:${phonenumber}:${new Decimal(amount).toFixed()}:${currency.toUpperCase()}`;
}

/** Seconds an open request record lives: the service's default expiry of 24 hours. */
export const OPEN_REQUEST_TTL_SECONDS = 24 * 3600;
