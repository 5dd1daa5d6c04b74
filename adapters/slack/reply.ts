/**
 * How an answer reaches the user after the 3-second acknowledgement.
 *
 * Decision: a later prompt goes to the `response_url` of the interaction that caused it (a button click, or
 * the "Answer" click whose modal was submitted), replacing the message that held the button, so one
 * ephemeral message moves through the flow. Slack allows 5 uses of a response_url in 30 minutes: uses are
 * counted atomically in the session store (so every instance shares the count), and past the budget, or
 * when Slack refuses the response_url, the prompt goes as a direct message through the Web API
 * (chat.postMessage to the user id opens the app's DM). Notifications always use the direct message.
 */
import { createHash } from 'node:crypto';
import type { webApi } from '@slack/bolt';
import type { Logger } from '../../src/log.js';
import { keys } from '../../src/store/keys.js';
import type { Store } from '../../src/store/types.js';
import type { SlackMessage } from './blocks.js';

/** Where a later answer goes. */
export interface ReplyTarget {
  userId: string;
  /** response_url of the interaction being answered; absent for messages typed in the DM. */
  responseUrl?: string;
  /** Replace the message that held the clicked button (true for clicks and modal answers). */
  replaceOriginal: boolean;
}

export interface ReplierOptions {
  client: webApi.WebClient;
  store: Store;
  logger: Logger;
}

export interface Replier {
  /** Through the response_url while its budget lasts, else (or when it fails) as a direct message. */
  reply(target: ReplyTarget, message: SlackMessage): Promise<void>;
  /** A direct message to the user through the Web API (which retries 429 and transient errors, then throws). */
  direct(userId: string, message: SlackMessage): Promise<void>;
}

/** Slack's budget per response_url: 5 uses in 30 minutes. */
export const RESPONSE_URL_USES = 5;
const RESPONSE_URL_WINDOW_SECONDS = 30 * 60;
/** A response_url that has not answered in 5 s (Slack answers in well under one) gets a direct message instead. */
const RESPONSE_URL_TIMEOUT_MS = 5000;

export function createReplier(options: ReplierOptions): Replier {
  const { client, store, logger } = options;

  const direct: Replier['direct'] = async (userId, message) => {
    await client.chat.postMessage({ channel: userId, text: message.text, blocks: message.blocks });
  };

  /** Takes one use of the response_url's budget; false when it is spent. */
  const takeUse = async (responseUrl: string): Promise<boolean> => {
    const key = keys.slackResponseUrl(createHash('sha256').update(responseUrl).digest('hex'));
    const { ok } = await store.addWithinLimit(key, 1, RESPONSE_URL_USES, RESPONSE_URL_WINDOW_SECONDS);
    return ok;
  };

  const postToResponseUrl = async (responseUrl: string, replaceOriginal: boolean, message: SlackMessage) => {
    const res = await fetch(responseUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ response_type: 'ephemeral', replace_original: replaceOriginal, ...message }),
      signal: AbortSignal.timeout(RESPONSE_URL_TIMEOUT_MS),
    });
    await res.body?.cancel();
    if (!res.ok) throw new Error(`response_url answered ${res.status}`);
  };

  const reply: Replier['reply'] = async (target, message) => {
    if (target.responseUrl) {
      if (await takeUse(target.responseUrl)) {
        try {
          await postToResponseUrl(target.responseUrl, target.replaceOriginal, message);
          return;
        } catch (err) {
          logger.warn(
            { userId: target.userId, err: String(err) },
            'slack: response_url failed; sending a direct message',
          );
        }
      } else {
        logger.info({ userId: target.userId }, 'slack: response_url budget spent; sending a direct message');
      }
    }
    await direct(target.userId, message);
  };

  return { reply, direct };
}
