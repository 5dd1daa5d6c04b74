/**
 * Works the messages of a delivery after the webhook has answered 200: each is claimed by its wamid (Meta
 * redelivers; a message seen before gets no second answer and moves nothing), then handled in its user's
 * queue, so one conversation's messages are answered in order: the window reopened, held outcomes sent,
 * the message read against the prompt shown (inbound.ts), the engine asked, its prompt sent (render.ts) and
 * recorded. Status callbacks are counted and failures logged; they are never answered.
 */
import type { Engine, Prompt } from '../../src/conversation/types.js';
import type { Store } from '../../src/store/types.js';
import type { KeyedQueue } from '../../src/conversation/channels/keyed-queue.js';
import { maskPhone, type Logger } from '../../src/log.js';
import { arrived, delivered, showing, type ChatRecords } from './chat-record.js';
import type { GraphApi } from './graph-api.js';
import { expiredText, helpText, readMessage, unsupportedText } from './inbound.js';
import type { IncomingMessage, MessageStatus } from './payload.js';
import { renderPrompt, textMessages } from './render.js';

/** Said when a message could not be worked before the engine saw it (the store failed): nothing happened. */
const NOT_READ_TEXT = 'Sorry, I could not read your message just now. Please send it again.';

/** How long a wamid is remembered: Meta redelivers a webhook it holds undelivered for up to 7 days. */
const MESSAGE_TTL_SECONDS = 7 * 24 * 3600;

/** Statuses Meta reports (sent, delivered, read, failed...); anything else is counted as `other`. */
const STATUSES = new Set(['sent', 'delivered', 'read', 'failed', 'deleted', 'warning']);

export interface HandlerDeps {
  engine: Engine;
  /** Holds the claims of wamids (duplicate deliveries). */
  store: Store;
  chats: ChatRecords;
  api: GraphApi;
  queue: KeyedQueue;
  logger: Logger;
  /** Mark each message read as it is worked. */
  readReceipts: boolean;
  /** Counts status callbacks by status. */
  countStatus: (status: string) => void;
  now: () => number;
}

export interface MessageHandler {
  /** Queues a message for its user; returns at once. */
  accept(message: IncomingMessage): void;
  /** Records a status callback. */
  status(status: MessageStatus): void;
  /**
   * Shows a prompt the engine settled on after answering "processing" (its buttons too), in the user's
   * order. The user wrote moments ago, so the 24-hour window is open.
   */
  showLate(waId: string, prompt: Prompt): Promise<void>;
}

export function createMessageHandler(deps: HandlerDeps): MessageHandler {
  const { engine, store, chats, api, queue, logger, now } = deps;

  async function say(waId: string, text: string): Promise<void> {
    for (const message of textMessages(text)) await api.send(waId, message);
  }

  /** Sends page `page` of a prompt and records it as the one the chat shows. */
  async function show(waId: string, prompt: Prompt, page: number, earlier: string[] = []): Promise<void> {
    let last: string | undefined;
    for (const message of renderPrompt(prompt, page)) last = await api.send(waId, message);
    const messageIds = last === undefined ? earlier : [...earlier, last].slice(-20);
    await chats.update(waId, showing({ prompt, page, messageIds }));
  }

  /** When the user wrote, in ms: Meta's timestamp, never later than now. */
  const sentAt = (message: IncomingMessage): number =>
    Math.min(now(), message.timestamp ? Number(message.timestamp) * 1000 : now());

  async function work(message: IncomingMessage, claimed: Promise<boolean>): Promise<void> {
    const waId = message.from;
    let asked = false;
    let reading: Promise<unknown> | undefined;
    try {
      if (!(await claimed)) {
        logger.info({ user: maskPhone(waId) }, 'whatsapp: a message delivered again was ignored');
        return;
      }
      const before = await chats.update(waId, arrived(sentAt(message)));
      // The read receipt's failure is logged and counted by the API client; it holds nothing up.
      if (deps.readReceipts) reading = api.markRead(message.id).catch(() => undefined);
      const missed = before.missed ?? [];
      if (missed.length > 0) {
        for (const text of missed) await say(waId, text);
        await chats.update(waId, delivered(missed.length));
      }
      const action = readMessage(message, before.shown);
      const lang = before.shown?.prompt.lang;
      logger.debug({ user: maskPhone(waId), type: message.type, action: action.kind }, 'whatsapp: message');
      switch (action.kind) {
        case 'ignore':
          return;
        case 'help':
          return await say(waId, helpText(lang));
        case 'unsupported':
          return await say(waId, unsupportedText(lang));
        case 'expired':
          return await say(waId, expiredText(lang));
        case 'page':
          return await show(waId, before.shown!.prompt, action.page, before.shown!.messageIds);
        case 'engine': {
          asked = true;
          const inbound = {
            channel: 'whatsapp' as const,
            conversationId: waId,
            userId: waId,
            messageId: message.id,
            phoneNumber: `+${waId}`,
          };
          return await show(waId, await engine.handle({ ...inbound, ...action.request }), 0);
        }
      }
    } catch (error) {
      logger.error(
        { user: maskPhone(waId), err: error instanceof Error ? error.message : String(error) },
        'whatsapp: message not handled',
      );
      // Once the engine has the message it may have moved money: never ask for it again then.
      if (!asked) await say(waId, NOT_READ_TEXT).catch(() => undefined);
    } finally {
      await reading;
    }
  }

  return {
    accept(message) {
      // Claimed on arrival, so a redelivery is known even while the first waits in the queue; a failed
      // claim is read (and reported) in work(), in the user's order.
      const claimed = store.claim(`wa:message:${message.id}`, MESSAGE_TTL_SECONDS);
      claimed.catch(() => undefined);
      // work() catches and logs every failure (and tells the user), so this cannot reject.
      void queue.run(message.from, () => work(message, claimed));
    },
    status(status) {
      deps.countStatus(STATUSES.has(status.status) ? status.status : 'other');
      if (status.status === 'failed') {
        const [error] = status.errors ?? [];
        logger.warn(
          { to: maskPhone(status.recipient_id), code: error?.code, title: error?.title },
          'whatsapp: a message was not delivered',
        );
      }
    },
    showLate(waId, prompt) {
      return queue.run(waId, () => show(waId, prompt, 0));
    },
  };
}
