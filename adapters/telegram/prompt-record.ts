/**
 * The prompt a chat is looking at: which message shows it and its choices. Buttons carry only indexes
 * (keyboard.ts); a press is read against this record, and a press on any other message is stale.
 * Kept in the store under `tg:prompt:<chatId>`, so any process can answer a button press.
 */
import { keys } from '../../src/store/keys.js';
import type { Prompt } from '../../src/conversation/types.js';
import type { Store } from '../../src/store/types.js';

export interface ShownPrompt {
  /** The Telegram message showing the prompt. */
  messageId: number;
  prompt: Prompt;
}

export interface PromptRecords {
  get(chatId: string): Promise<ShownPrompt | null>;
  put(chatId: string, shown: ShownPrompt): Promise<void>;
}

/** Tries of a write that keeps losing compare-and-set to another process before giving up. */
const WRITE_TRIES = 3;

export function createPromptRecords(store: Store, ttlSeconds: number): PromptRecords {
  return {
    async get(chatId) {
      const stored = await store.get(keys.telegramPrompt(chatId));
      return stored ? (stored.snapshot as ShownPrompt) : null;
    },
    // The last message sent is the one the user sees, so the last writer wins: re-read on a lost race.
    async put(chatId, shown) {
      for (let i = 0; i < WRITE_TRIES; i++) {
        const current = await store.get(keys.telegramPrompt(chatId));
        const written = await store.set(keys.telegramPrompt(chatId), shown, current?.version ?? null, ttlSeconds);
        if (written !== null) return;
      }
      throw new Error(`could not record the prompt of chat ${chatId}: kept losing to concurrent writers`);
    },
  };
}
