/**
 * What the channel keeps per WhatsApp user, in the store under `wa:chat:<wa_id>` (Redis when
 * REDIS_URL is set, so every process sees it): when the user last wrote (WhatsApp's 24-hour customer
 * service window starts there), the prompt the chat shows (taps and typed choices are read against it), and
 * outcomes that could not be sent while the window was closed (sent when the user writes again).
 * Written with compare-and-set, re-read and redone when another writer got there first.
 */
import type { Store } from '../../src/store/types.js';
import type { ShownPrompt } from './inbound.js';

export interface ChatRecord {
  /** Unix ms of the user's latest message, as Meta timed it (never later than its arrival here). */
  lastInboundAt?: number;
  shown?: ShownPrompt;
  /** Outcomes held while the window was closed, oldest first. */
  missed?: string[];
}

/** WhatsApp lets a business answer freely for 24 hours after the user's last message. */
const WINDOW_MS = 24 * 3600 * 1000;
/** Margin kept before the window closes: a send takes time (retries included) and clocks differ. */
const WINDOW_MARGIN_MS = 5 * 60 * 1000;
/** A record lives a week: held outcomes wait that long for the user to write again. */
const RECORD_TTL_SECONDS = 7 * 24 * 3600;
/** Outcomes held per user; older ones give way (the latest says where things stand). */
const MISSED_KEPT = 5;
const WRITE_TRIES = 5;

/** True when a free-form message may still be sent to the user at `now`. */
export function windowOpen(record: ChatRecord | null, now: number): boolean {
  return record?.lastInboundAt !== undefined && now - record.lastInboundAt < WINDOW_MS - WINDOW_MARGIN_MS;
}

export interface ChatRecords {
  get(waId: string): Promise<ChatRecord | null>;
  /** Applies `change` to the stored record; resolves to the record as it was before. */
  update(waId: string, change: (record: ChatRecord) => ChatRecord): Promise<ChatRecord>;
}

const chatKey = (waId: string): string => `wa:chat:${waId}`;

export function createChatRecords(store: Store): ChatRecords {
  return {
    async get(waId) {
      return ((await store.get(chatKey(waId)))?.snapshot as ChatRecord | undefined) ?? null;
    },
    async update(waId, change) {
      for (let i = 0; i < WRITE_TRIES; i++) {
        const stored = await store.get(chatKey(waId));
        const before = (stored?.snapshot as ChatRecord | undefined) ?? {};
        if ((await store.set(chatKey(waId), change(before), stored?.version ?? null, RECORD_TTL_SECONDS)) !== null)
          return before;
      }
      throw new Error('the WhatsApp chat record kept changing under concurrent writers');
    },
  };
}

/** The change recording a message from the user at `at` (ms): the window opens again from there. */
export const arrived =
  (at: number) =>
  (record: ChatRecord): ChatRecord => ({ ...record, lastInboundAt: Math.max(record.lastInboundAt ?? 0, at) });

/** The change holding an outcome for the user's next message. */
export const hold =
  (text: string) =>
  (record: ChatRecord): ChatRecord => ({ ...record, missed: [...(record.missed ?? []), text].slice(-MISSED_KEPT) });

/** The change dropping the first `count` held outcomes (sent). */
export const delivered =
  (count: number) =>
  (record: ChatRecord): ChatRecord => ({ ...record, missed: (record.missed ?? []).slice(count) });

/** The change recording the prompt the chat shows now. */
export const showing =
  (shown: ShownPrompt) =>
  (record: ChatRecord): ChatRecord => ({ ...record, shown });
