/**
 * The one logger (pino). Secrets and personal data never reach a log in clear: API keys, tokens, PINs and
 * USSD `text` (which carries PINs) are redacted by path; phone numbers are masked with maskPhone().
 */
import { pino, type Logger, type DestinationStream } from 'pino';

export const REDACT_PATHS = [
  'apiKey',
  '*.apiKey',
  'token',
  '*.token',
  'pin',
  '*.pin',
  'text',
  '*.text',
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'password',
  '*.password',
  'secret',
  '*.secret',
];

export function createLogger(level = process.env.LOG_LEVEL ?? 'info', destination?: DestinationStream): Logger {
  const options = { level, redact: { paths: REDACT_PATHS, censor: '[redacted]' } };
  return destination ? pino(options, destination) : pino(options);
}

/** +256772123456 -> +2567*****456: enough to tell numbers apart in a log, not enough to call one. */
export function maskPhone(phone: string | undefined | null): string {
  if (!phone) return '';
  const digits = phone.replace(/\s+/g, '');
  if (digits.length <= 6) return '*'.repeat(digits.length);
  return digits.slice(0, 5) + '*'.repeat(Math.max(0, digits.length - 8)) + digits.slice(-3);
}

/** A channel's user or conversation id as a log may show it: masked where it is a phone number (USSD, WhatsApp). */
export function maskUserId(channel: string, id: string): string {
  return channel === 'ussd' || channel === 'whatsapp' ? maskPhone(id) : id;
}

export const logger = createLogger();
export type { Logger };

/** An error as a log field: its message (or what was thrown, as text). */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
