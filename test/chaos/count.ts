/**
 * The chaos run's figures, and what a failed conversation shows for its diagnosis. The figures, per run:
 * - conversations: the people who set out to pay (one payment each);
 * - confirmed: those who got an acknowledgement of their final confirmation (USSD: the answer to the PIN;
 *   Telegram: the message after pressing Confirm) saying the payment is under way ("submitted", "being
 *   confirmed", "still working on it", ...), or who, about to start over, were shown news of it (a note at
 *   the next dial, a chat message) and so did not pay again;
 * - payments: the distinct payments at the sandbox whose metadata.chat is one of those conversations, summed;
 * - duplicates: the extra ones: per conversation, its payments beyond the first, summed;
 * - lost: confirmed conversations without any payment at the sandbox;
 * - told: confirmed users who saw the outcome (USSD: a screen at a dial; Telegram: a chat message);
 * - kills: product instances killed with SIGKILL during the run.
 * A run passes when payments = confirmed, duplicates = 0, lost = 0, told = confirmed, kills >= its minimum
 * (5 in a run of 500: one per hundred conversations, at least one) and no instance died by itself.
 */
import type { Conversation } from './users.js';

export interface Figures {
  conversations: number;
  confirmed: number;
  payments: number;
  duplicates: number;
  lost: number;
  told: number;
  kills: number;
}

/** A payment at the sandbox, as the diagnosis shows it. */
export interface SandboxPayment {
  id: number;
  state: string;
  chat?: string;
  ref?: string;
  created?: string;
}

/** The least kills a run of `conversations` must have: one per hundred conversations, at least one. */
export const minimumKills = (conversations: number): number => Math.max(1, Math.ceil(conversations / 100));

export function countFigures(conversations: Conversation[], payments: SandboxPayment[], kills: number): Figures {
  const made = paymentsByChat(payments);
  const figures: Figures = {
    conversations: conversations.length,
    confirmed: 0,
    payments: 0,
    duplicates: 0,
    lost: 0,
    told: 0,
    kills,
  };
  for (const c of conversations) {
    const n = made.get(c.chat)?.length ?? 0;
    figures.payments += n;
    figures.duplicates += Math.max(0, n - 1);
    if (!c.confirmed) continue;
    figures.confirmed++;
    if (n === 0) figures.lost++;
    if (c.told) figures.told++;
  }
  return figures;
}

export function resultLine(f: Figures): string {
  return `chaos: conversations=${f.conversations} confirmed=${f.confirmed} payments=${f.payments} duplicates=${f.duplicates} lost=${f.lost} told=${f.told} kills=${f.kills}`;
}

export function passes(f: Figures): boolean {
  return (
    f.payments === f.confirmed &&
    f.duplicates === 0 &&
    f.lost === 0 &&
    f.told === f.confirmed &&
    f.kills >= minimumKills(f.conversations)
  );
}

export function paymentsByChat(payments: SandboxPayment[]): Map<string, SandboxPayment[]> {
  const byChat = new Map<string, SandboxPayment[]>();
  for (const p of payments) {
    if (!p.chat) continue;
    byChat.set(p.chat, [...(byChat.get(p.chat) ?? []), p]);
  }
  return byChat;
}

export type FailureKind = 'duplicate' | 'lost' | 'paid-unconfirmed' | 'never-told';

/** What went wrong with one conversation, if anything. */
export function failuresOf(c: Conversation, made: number): FailureKind[] {
  const kinds: FailureKind[] = [];
  if (made > 1) kinds.push('duplicate');
  if (c.confirmed && made === 0) kinds.push('lost');
  if (!c.confirmed && made > 0) kinds.push('paid-unconfirmed');
  if (c.confirmed && made > 0 && !c.told) kinds.push('never-told');
  return kinds;
}
