/**
 * The bot's one middleware: every update is read (updates.ts), claimed once, and handled in its chat's
 * queue. A message is answered with a new message; a button press edits the message it was pressed on,
 * so a conversation of buttons stays one message instead of flooding the chat. A prompt the engine settled
 * on after answering "processing" comes as a new message too (showLate), in the chat's order.
 */
import { GrammyError, type Api, type Context } from 'grammy';
import { keys } from '../../src/store/keys.js';
import type { Lang } from '../../flows/types.js';
import type { Engine, Inbound, Prompt } from '../../src/conversation/types.js';
import type { Store } from '../../src/store/types.js';
import type { Logger } from '../../src/log.js';
import { helpText } from './commands.js';
import { render } from '../../src/conversation/flow/render.js';
import { describeError } from './describe-error.js';
import { renderKeyboard } from './keyboard.js';
import type { PromptRecords, ShownPrompt } from './prompt-record.js';
import type { KeyedQueue } from '../../src/conversation/channels/keyed-queue.js';
import { readUpdate, type TelegramAction } from './updates.js';

export const FAILURE_TEXT = 'Something went wrong; nothing was sent twice. Please try again.';
/**
 * Said instead when the failure came after the engine answered about a money-moving call (Prompt.money: the
 * payment, request or purchase may have reached the service): never "try again", which would pay twice.
 */
export const MONEY_FAILURE_TEXT =
  'Something went wrong showing the answer. What you confirmed is being processed: do not send it again. You will get a message with the result.';
/** Said (a toast) for a press on a menu no longer shown, in the language of the one shown, if any. */
export const expiredText = (lang: Lang = 'en'): string => render({ key: 'telegram.expired' }, lang);
export const EXPIRED_TEXT = expiredText();
/** Said (long polling only) when an update could not even be taken: the store is unreachable; nothing of it was done. */
export const NOT_TAKEN_TEXT =
  'We cannot reach your conversation right now, so this was not done. Please send it again in a minute; nothing you confirmed before is lost.';

/**
 * An update that could not be claimed (the store is unreachable): nothing of it was handled. On the webhook it
 * is refused (503, webhook.ts), so Telegram delivers it again later instead of the user being told anything.
 */
export class UpdateNotTaken extends Error {
  constructor(cause: unknown) {
    super('the update could not be claimed: the conversation store is unreachable', { cause });
    this.name = 'UpdateNotTaken';
  }
}

/** The answer to a flow asked for in a group: screens with amounts, names and PINs stay in a private chat. */
export function directOnlyText(botUsername: string): string {
  return `I handle payments, requests and checks only in a private chat, where nobody else sees them: write to me directly at https://t.me/${botUsername}`;
}

/** How long an update_id is remembered: Telegram gives up redelivering an update well within a day. */
const UPDATE_TTL_SECONDS = 86_400;

/** What the engine answered an update, once it did (the failure text depends on it). */
interface Answered {
  prompt?: Prompt;
}

export interface HandlerDeps {
  engine: Engine;
  store: Store;
  records: PromptRecords;
  queue: KeyedQueue;
  logger: Logger;
  /**
   * Return before the update is handled (it goes on in its chat's queue). For long polling, where grammY
   * hands over updates one at a time, so one chat waiting for a payment does not hold up every other chat;
   * the cost is that updates fetched but not yet handled are lost if the process dies. False for the
   * webhook, whose answer should mean "handled". Default false.
   */
  detach?: boolean;
}

export interface UpdateHandler {
  /** The bot's middleware. */
  middleware: (ctx: Context) => Promise<void>;
  /**
   * Shows a prompt the engine settled on after answering "processing" (EngineOptions.onLateOutcome) as a new
   * message with its keyboard, recorded as the one the chat shows, so a press on it is read against it (and
   * the keyboard of the message before is removed). `api` is the bot's; `conversationId` the prompt's.
   */
  showLate(api: Api, conversationId: string, prompt: Prompt): Promise<void>;
}

/**
 * Shows page `page` of a prompt in message `messageId`, or in a new message when there is none or Telegram
 * refuses the edit (too old, deleted, not supported by the server). Returns the id of the message now
 * showing the prompt.
 */
async function show(
  api: Api,
  chatId: number | string,
  messageId: number | undefined,
  prompt: Prompt,
  page = 0,
): Promise<number> {
  const reply_markup = renderKeyboard(prompt, page);
  if (messageId !== undefined) {
    try {
      await api.editMessageText(chatId, messageId, prompt.text, { reply_markup });
      return messageId;
    } catch (error) {
      // No answer at all: whether the edit happened is unknown, so do not risk showing the prompt twice.
      if (!(error instanceof GrammyError)) throw error;
      // Same text and keyboard as before: the message already shows the prompt.
      if (/message is not modified/i.test(error.description)) return messageId;
    }
  }
  const sent = await api.sendMessage(chatId, prompt.text, { reply_markup });
  return sent.message_id;
}

export function createUpdateHandler({
  engine,
  store,
  records,
  queue,
  logger,
  detach = false,
}: HandlerDeps): UpdateHandler {
  /**
   * Shows a prompt in `messageId` (a press) or a new message, and records it as the one the chat shows. When
   * a new message takes over, the keyboard of `before` (the record it replaces) is removed, as its buttons no
   * longer work.
   */
  async function present(
    api: Api,
    chatId: number | string,
    conversationId: string,
    prompt: Prompt,
    messageId: number | undefined,
    before: ShownPrompt | null,
  ): Promise<void> {
    const shownIn = await show(api, chatId, messageId, prompt);
    await records.put(conversationId, { messageId: shownIn, prompt });
    if (before && !before.prompt.final && before.messageId !== shownIn) {
      await api.editMessageReplyMarkup(chatId, before.messageId).catch((error: unknown) => {
        logger.debug({ err: describeError(error) }, 'telegram: old keyboard left in place');
      });
    }
  }

  /** Asks the engine and shows its answer: in `messageId` (a press) or a new message (a typed answer). */
  async function ask(
    api: Api,
    action: TelegramAction,
    request: Partial<Inbound>,
    answered: Answered,
    messageId?: number,
  ): Promise<void> {
    // Read before the engine is asked: a store failing here is told "try again", as nothing was done yet.
    const before = messageId === undefined ? await records.get(action.origin.conversationId) : null;
    const prompt = await engine.handle({ ...action.origin, ...request });
    answered.prompt = prompt;
    await present(api, action.chatId, action.origin.conversationId, prompt, messageId, before);
  }

  /** Handles a button press; returns the text of the toast that answers it, if any. */
  async function press(
    api: Api,
    action: Extract<TelegramAction, { kind: 'press' }>,
    answered: Answered,
  ): Promise<string | undefined> {
    const shown = await records.get(action.origin.conversationId);
    const { button } = action;
    // Only the message showing the current prompt has live buttons; indexes on any other are meaningless.
    if (!button || !shown || shown.messageId !== action.messageId) return expiredText(shown?.prompt.lang);
    if (button.kind === 'page') {
      const shownIn = await show(api, action.chatId, action.messageId, shown.prompt, button.page);
      if (shownIn !== shown.messageId)
        await records.put(action.origin.conversationId, { ...shown, messageId: shownIn });
      return undefined;
    }
    if (button.kind === 'nav') {
      await ask(api, action, { nav: button.nav }, answered, action.messageId);
      return undefined;
    }
    const choice = shown.prompt.choices?.[button.index];
    if (!choice) return expiredText(shown.prompt.lang);
    await ask(api, action, { choice: choice.id }, answered, action.messageId);
    return undefined;
  }

  async function handle(
    api: Api,
    action: TelegramAction,
    updateId: number,
    claimed: Promise<boolean>,
    botUsername: string,
  ): Promise<void> {
    let repeated = false;
    let toast: string | undefined;
    const answered: Answered = {};
    let isNew: boolean;
    try {
      isNew = await claimed;
    } catch (error) {
      if (!detach) throw new UpdateNotTaken(error);
      logger.error({ err: describeError(error), updateId, chatId: action.chatId }, 'telegram: update not taken');
      await api.sendMessage(action.chatId, NOT_TAKEN_TEXT).catch(() => undefined);
      return;
    }
    try {
      // A redelivery of an update handled to its end is ignored. One whose first handling never ended (its
      // process died, or its answer was lost) is handled again: the engine answers it from its ledger without a
      // second step, and the chat gets what the first could not show (a payment's outcome among them).
      if (!isNew && (await store.get(keys.telegramUpdateDone(updateId)).catch(() => null)) !== null) {
        repeated = true;
        logger.debug({ updateId }, 'telegram: repeated update ignored');
      } else if (action.kind === 'group') {
        if (action.queryId === undefined) await api.sendMessage(action.chatId, directOnlyText(botUsername));
        else toast = directOnlyText(botUsername);
      } else if (action.kind === 'press') toast = await press(api, action, answered);
      else if (action.request === 'help') {
        const shown = await records.get(action.origin.conversationId).catch(() => undefined);
        await api.sendMessage(action.chatId, helpText(shown?.prompt.lang));
      } else await ask(api, action, action.request, answered);
      if (!repeated)
        await store.set(keys.telegramUpdateDone(updateId), 1, null, UPDATE_TTL_SECONDS).catch(() => undefined);
    } catch (error) {
      logger.error({ err: describeError(error), updateId, chatId: action.chatId }, 'telegram: update failed');
      await api
        .sendMessage(action.chatId, answered.prompt?.money ? MONEY_FAILURE_TEXT : FAILURE_TEXT)
        .catch((sendError: unknown) => {
          logger.error(
            { err: describeError(sendError), chatId: action.chatId },
            'telegram: could not report a failure',
          );
        });
    } finally {
      // Always answer a press (its first delivery did), or the button spins in the user's client.
      const queryId = action.kind === 'press' || action.kind === 'group' ? action.queryId : undefined;
      if (queryId !== undefined && !repeated) {
        await api.answerCallbackQuery(queryId, toast ? { text: toast } : undefined).catch((error: unknown) => {
          logger.warn({ err: describeError(error), updateId }, 'telegram: could not answer a callback query');
        });
      }
    }
  }

  // Never throws: a failure is reported to the user and logged, so the webhook answers 200 and Telegram does
  // not redeliver an update that would fail again. Before a money-moving call the user is asked to repeat the
  // step; after one (the engine's answer says so) they are told it is being processed and not to send it
  // again, as its outcome comes by message.
  const middleware = async (ctx: Context): Promise<void> => {
    const action = readUpdate(ctx.update, ctx.me.username);
    if (!action) return;
    const updateId = ctx.update.update_id;
    // Claimed on arrival, so a redelivery is known even while the first delivery waits in the queue. Its
    // outcome (or the store's failure) is read in handle(), in the chat's order; the no-op catch only keeps
    // a failure from counting as unhandled while it waits.
    const claimed = store.claim(keys.telegramUpdate(updateId), UPDATE_TTL_SECONDS);
    claimed.catch(() => undefined);
    const handled = queue.run(String(action.chatId), () => handle(ctx.api, action, updateId, claimed, ctx.me.username));
    if (!detach) await handled;
  };

  return {
    middleware,
    showLate(api, conversationId, prompt) {
      // A group member's conversation is `<chat id>:<user id>` (updates.ts): the message goes to the chat.
      const chatId = conversationId.split(':')[0]!;
      return queue.run(chatId, async () =>
        present(api, chatId, conversationId, prompt, undefined, await records.get(conversationId)),
      );
    },
  };
}
