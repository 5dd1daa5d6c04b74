/**
 * What the client checks and normalises before a request leaves: amounts become decimal strings,
 * phone numbers must be international, metadata becomes an object. A failure throws
 * ValidationError (status 0) naming the field under the spec's name, and nothing is sent.
 */
import { Decimal } from 'decimal.js';
import { ValidationError } from './errors.js';

/** An amount as callers hold it; always sent as a decimal string, never a binary float. */
export type Amount = string | number | Decimal;

/** Metadata as an object, or the JSON text of one (the spec accepts both). */
export type Metadata = Record<string, unknown> | string;

const INTERNATIONAL_PHONE = /^\+[1-9]\d{6,14}$/;

/** True for an international number as the service demands it: `+`, country code, digits only. */
export function isInternationalPhone(value: string): boolean {
  return INTERNATIONAL_PHONE.test(value);
}

export function phone(value: string | undefined, field: string): string {
  if (value === undefined || !isInternationalPhone(value)) {
    throw ValidationError.local({
      [field]: ['must be an international number starting with + (for example +256772123456)'],
    });
  }
  return value;
}

export function amount(value: Amount, field = 'amount'): string {
  let decimal: Decimal;
  try {
    decimal = new Decimal(value);
  } catch {
    throw ValidationError.local({ [field]: ['must be a decimal number without separators'] });
  }
  if (!decimal.isFinite() || decimal.isNegative()) {
    throw ValidationError.local({ [field]: ['must be a finite amount of zero or more'] });
  }
  return decimal.toFixed();
}

export function metadata(value: Metadata, field = 'metadata'): Record<string, unknown> {
  let parsed: unknown = value;
  if (typeof value === 'string') {
    try {
      parsed = JSON.parse(value);
    } catch {
      throw ValidationError.local({ [field]: ['must be a JSON object'] });
    }
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw ValidationError.local({ [field]: ['must be a JSON object'] });
  }
  return parsed as Record<string, unknown>;
}

export function required(value: string | undefined, field: string): string {
  if (value === undefined || value.trim() === '') throw ValidationError.local({ [field]: ['is required'] });
  return value;
}
