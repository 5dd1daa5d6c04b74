/**
 * An error as a log line may show it. Bot API errors carry the payload of the failed call (a user's text,
 * a prompt), and the log's redaction reaches only one level deep, so they are never logged whole.
 */
import { GrammyError } from 'grammy';

export function describeError(error: unknown): Record<string, unknown> {
  if (error instanceof GrammyError)
    return { name: error.name, method: error.method, code: error.error_code, message: error.description };
  if (error instanceof Error) return { name: error.name, message: error.message };
  return { message: String(error) };
}
