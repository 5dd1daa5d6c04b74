/**
 * Text from the network or from other users (names, reasons, references, bundle and product descriptions)
 * is data, never layout. Before it is put on any screen or into any notification, control characters, line
 * and paragraph breaks and bidirectional overrides are taken out, so a name cannot add lines to a USSD
 * screen (a fake "1. Confirm"), end a Telegram message early, or show its words in another order. Every
 * screen and notification is made with {@link fillTemplate}, which does it to each value it puts in.
 */
import type { Params } from '../../../flows/types.js';

/**
 * C0 and C1 controls (line feed, carriage return, tab, escape, DEL...), the line and paragraph separators,
 * and the bidirectional marks, embeddings, overrides and isolates.
 */
const UNSAFE = /[\p{Cc}\u2028\u2029\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/gu;

/** The value as one plain line: each unsafe character becomes a space, and runs of spaces one space. */
export function plainText(value: string): string {
  return value.replace(UNSAFE, ' ').replace(/ {2,}/g, ' ');
}

/** A catalogue template with its `{name}` placeholders filled, each value made {@link plainText}. */
export function fillTemplate(template: string, params: Params | undefined): string {
  if (!params) return template;
  return template.replace(/\{(\w+)\}/g, (whole, name: string) => (name in params ? plainText(String(params[name])) : whole));
}
