/**
 * The people of a chaos run: each pays Sarah Nakato once, over USSD (Africa's Talking requests) or Telegram
 * (webhook updates), and behaves as a person does:
 * - answers what the screen asks, and nothing else;
 * - starts over only when told to (an error, "start again", "dial again") or when the channel shows nothing
 *   (USSD: the gateway's error when the product did not answer; Telegram: no message after a while);
 * - before paying again, reads what the new screen says (USSD: the notes shown at a new dial) or what the
 *   chat got since (Telegram): news of their payment (submitted, being confirmed, an outcome) means it is
 *   under way, and they do not pay again;
 * - once the product acknowledged the final confirmation, never confirms again on their own, and look for
 *   the outcome: USSD by dialling again every second, Telegram by reading the chat. Told "being confirmed"
 *   or "still working on it", they wait for the outcome like that; told later that something went wrong
 *   and to start again (a note at a dial, a chat message, with no news of the payment), they do.
 * Telegram itself redelivers an update whose webhook call failed (no answer or not 200), as the Bot API does.
 */
import type { ChaosBotApi } from './bot-api.js';
import { NoAnswer, type Answer, type Request, type Transport } from './transport.js';
import { until } from '../until.js';

export const PIN = '1234';
const PAYEE = '0772000001';

/** The product says the payment is under way (the answer to a final confirmation, or news of it later). */
export const ACKNOWLEDGED =
  /submitted|being confirmed|still working on it|may or may not have been made|do not (pay|send it) again|taking longer than expected|Dial again shortly|Payment (\d+|MC-\w+) of |We will tell you when it arrives|You paid [\d,.]+ [A-Z]{3} to .* (ago|just now)/i;
/** The payment's outcome. */
export const OUTCOME = /Done: .* reached|failed: |was rejected|was cancelled/;
/** The product tells the user to start over. */
export const START_OVER = /something went wrong|start again/i;
/**
 * The product says a confirmation sent nothing (a run that failed before its call, a PIN check interrupted);
 * not "nothing was sent twice" (a repeat refused: the first was sent).
 */
const NOTHING_SENT = /nothing was sent(?! twice)/i;
/** A screen or message that says the payment exists: under way, or how it ended. */
const isNews = (text: string) => ACKNOWLEDGED.test(text) || OUTCOME.test(text);

/** What a look for the outcome found. */
type Look = { kind: 'told' } | { kind: 'start-again'; text: string } | { kind: 'nothing' };

/** One step of a conversation, for the diagnosis of a failed one. */
export interface TrailStep {
  /** When the request was sent, and when its answer came (or none did), in milliseconds since the run started. */
  t: number;
  took?: number;
  /** The instance that answered, when one did. */
  via?: string;
  what: string;
}

export interface Conversation {
  index: number;
  channel: 'ussd' | 'telegram';
  /** The chat address the product puts in metadata.chat: `ussd:+256…` or `telegram:<id>`. */
  chat: string;
  amount: string;
  /** The user got an acknowledgement of the final confirmation (see count.ts). */
  confirmed: boolean;
  /** How: the answer to the confirmation itself, or news of the payment seen before paying again. */
  ackBy?: 'answer' | 'news';
  /** The user saw the payment's outcome. */
  told: boolean;
  confirmedAt?: number;
  lastLookAt?: number;
  startedAt?: number;
  endedAt?: number;
  restarts: number;
  /** What the final confirmations that were not acknowledged got instead ("nothing", an error, ...). */
  unacknowledged: string[];
  /**
   * A final confirmation got no acknowledgement and nothing since said what became of it: news of a payment
   * is read as news of that one. Told that nothing was sent and to start again, the user no longer waits.
   */
  open?: boolean;
  trail: TrailStep[];
}

/** What a person does with a screen. */
export type Decision =
  | { kind: 'choose'; label: RegExp; final?: boolean }
  | { kind: 'text'; value: string; final?: boolean }
  | { kind: 'unknown' };

/** What a person paying Sarah Nakato does with a screen (the soak benchmark's users too, bench/soak). */
export function decide(text: string, channel: 'ussd' | 'telegram', amount: string): Decision {
  if (/What do you want to send\?/.test(text)) return { kind: 'choose', label: /^Mobile money$/ };
  // Sarah among the people paid lately (a payment to her made before): she is picked from the list.
  if (/Pay whom\?/.test(text)) return { kind: 'choose', label: /Sarah Nakato|256772000001/ };
  if (/What would you like to do\?/.test(text)) return { kind: 'choose', label: /^Pay someone$/ };
  // A dial after a session that died mid-payment offers to take it up (issue 19): a person continues it.
  if (/Continue where you left off\?/.test(text)) return { kind: 'choose', label: /^Continue$/ };
  if (/phone number of the person to pay/.test(text)) return { kind: 'text', value: PAYEE };
  if (/first name of its owner/.test(text)) return { kind: 'text', value: 'Sarah' };
  if (/Enter the last name/.test(text)) return { kind: 'text', value: 'Nakato' };
  if (/Enter the amount/.test(text)) return { kind: 'text', value: amount };
  if (/Choose the currency/.test(text)) return { kind: 'choose', label: /^UGX$/ };
  if (/Enter a description/.test(text)) return { kind: 'text', value: 'chaos lunch' };
  // "…knows this number as" (a name differing from the one typed) or "…knows +256… as" (verified before).
  if (/The network knows .+ as/.test(text)) return { kind: 'choose', label: /^Pay / };
  if (/of mobile money to/.test(text)) return { kind: 'choose', label: /^Confirm$/, final: channel === 'telegram' };
  if (/Enter your PIN/.test(text)) return { kind: 'text', value: PIN, final: true };
  return { kind: 'unknown' };
}

/** The number to type for the choice of a USSD screen whose label matches. */
export function ussdChoice(screen: string, label: RegExp): string | undefined {
  for (const line of screen.split('\n')) {
    const m = /^(\d+)\.\s+(.*)$/.exec(line.trim());
    if (m && label.test(m[2]!.trim())) return m[1];
  }
  return undefined;
}

/**
 * How long a person keeps at it: six tries at least, and more (twelve at most) while a minute has not passed
 * since the first. The machine's load stretches every answer and every instance's restart while the faults
 * come on the clock: six tries alone could all fall inside one instance's run of kills (a dial waiting for a
 * run held by a process killed under it gets no answer), where a person would go on dialling.
 */
const MIN_ATTEMPTS = 6;
const MAX_ATTEMPTS = 12;
const PATIENCE_MS = 60_000;
const tryAgain = (attempt: number, since: number) =>
  attempt < MIN_ATTEMPTS || (attempt < MAX_ATTEMPTS && Date.now() - since < PATIENCE_MS);
/**
 * The pause before starting over the `attempt`-th time: 300 ms doubling, up to 5 s (9.3 s over five restarts),
 * as a person asked to start again waits longer each time it fails. Restarting every 300 ms, a person could
 * spend every attempt inside one fault: a one-second refusal of Redis writes, or a run held by a killed instance
 * until its 10 s lease expires (every dial meanwhile answered "still working on it").
 */
const restartPause = (attempt: number) => Math.min(300 * 2 ** (attempt - 1), 5000);
/** How long a Telegram user waits for a screen before doing something else. */
const TELEGRAM_PATIENCE_MS = 15_000;
/** Telegram's redeliveries of an update whose webhook call failed. */
const TELEGRAM_REDELIVERIES = 6;
/** A pause of a person's or of Telegram's own (their pace is what the run plays), never a wait for the product. */
// timer-ok: the helper of the people's own pauses; each use says whose pace it is.
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const short = (text: string) => text.replace(/\s+/g, ' ').slice(0, 140);

export interface PeopleOptions {
  transport: Transport;
  bot: ChaosBotApi;
  /** The Africa's Talking callback path (with its token when the product serves one). */
  ussdPath: string;
  /** The Telegram webhook's secret token. */
  telegramSecret: string;
  /** Distinguishes session ids between runs on one Redis. */
  seed: number;
  /** How long an acknowledged user keeps looking for the outcome. */
  lookForMs: number;
  /** When the run started (trail times are relative to it). */
  startedAt: number;
}

export function createPeople(options: PeopleOptions) {
  const { transport, bot } = options;
  const note = (c: Conversation, what: string, via?: string, sentAt?: number) =>
    c.trail.push({
      t: (sentAt ?? Date.now()) - options.startedAt,
      took: sentAt === undefined ? undefined : Date.now() - sentAt,
      via,
      what: short(what),
    });
  const acknowledge = (c: Conversation, by: 'answer' | 'news') => {
    c.confirmed = true;
    c.ackBy = by;
    c.confirmedAt = Date.now();
    c.open = false;
  };

  /**
   * An acknowledged user looks for the outcome every `everyMs` until told, for lookForMs at most ('done'),
   * unless the product tells them to start again meanwhile: then the acknowledgement no longer holds
   * ('start-again').
   */
  async function follow(c: Conversation, everyMs: number, look: () => Promise<Look>): Promise<'done' | 'start-again'> {
    const lookOnce = async (): Promise<Look | false> => {
      if (c.told) return { kind: 'told' };
      c.lastLookAt = Date.now();
      const seen = await look();
      if (seen.kind === 'told') c.told = true;
      return seen.kind === 'nothing' ? false : seen;
    };
    const seen = await until('the outcome or word to start again', lookOnce, {
      timeoutMs: options.lookForMs,
      everyMs,
    }).catch(() => undefined);
    if (seen?.kind !== 'start-again') return 'done';
    c.confirmed = false;
    c.ackBy = undefined;
    c.unacknowledged.push(`acknowledged, then told: ${short(seen.text)}`);
    c.open = false;
    return 'start-again';
  }

  // ---------------------------------------------------------------- USSD

  /** A gateway session: undefined when the product did not answer (the gateway shows the user an error). */
  function ussdSession(c: Conversation, number: number) {
    const phone = c.chat.slice('ussd:'.length);
    const sessionId = `chaos-${options.seed}-${c.index}-${number}`;
    const answers: string[] = [];
    let turn = c.index + number;
    const send = async (label: string): Promise<string | undefined> => {
      const body = new URLSearchParams({
        sessionId,
        serviceCode: '*384*123#',
        phoneNumber: phone,
        networkCode: '63902',
        text: answers.join('*'),
      }).toString();
      const request: Request = {
        path: options.ussdPath,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body,
      };
      const sentAt = Date.now();
      try {
        const answer = await transport.deliver(turn++, request);
        note(
          c,
          `${label} -> ${answer.status === 200 ? answer.text : `HTTP ${answer.status} ${answer.text}`}`,
          answer.instance,
          sentAt,
        );
        return answer.status === 200 ? answer.text : undefined;
      } catch (error) {
        if (!(error instanceof NoAnswer)) throw error;
        note(c, `${label} -> no answer (the gateway ends the session)`, error.instance, sentAt);
        return undefined;
      }
    };
    return { dial: () => send('dial'), answer: (a: string) => (answers.push(a), send(a === PIN ? 'PIN' : a)) };
  }

  /** One payment attempt over USSD from a new dial; resolves once acknowledged, or when the user must start over. */
  async function payOverUssd(c: Conversation, session: ReturnType<typeof ussdSession>): Promise<void> {
    let screen = await session.dial();
    if (screen === undefined) return;
    // Starting over after a confirmation that got no acknowledgement: the notes of a new dial may say the
    // payment is under way, or how it ended.
    if (c.open && isNews(screen)) {
      acknowledge(c, 'news');
      if (OUTCOME.test(screen)) c.told = true;
      return;
    }
    // Told plainly that nothing was sent: that confirmation no longer waits for news.
    if (START_OVER.test(screen) && NOTHING_SENT.test(screen)) c.open = false;
    for (let step = 0; step < 20 && screen !== undefined; step++) {
      if (screen.startsWith('END ')) return;
      // News of the payment on the way ("You paid 3,100 UGX … just now. Send a second payment?"): read as news
      // of the confirmation left open, as a person would, who then sends nothing more.
      if (c.open && isNews(screen)) {
        acknowledge(c, 'news');
        if (OUTCOME.test(screen)) c.told = true;
        return;
      }
      const d = decide(screen, 'ussd', c.amount);
      if (d.kind === 'unknown') return;
      const answer = d.kind === 'text' ? d.value : ussdChoice(screen, d.label);
      if (answer === undefined) return;
      screen = await session.answer(answer);
      if (d.final) {
        if (screen !== undefined && ACKNOWLEDGED.test(screen)) acknowledge(c, 'answer');
        // Told that nothing was sent: plainly not confirmed. Any other answer (none, an apology, an error, or a
        // screen of the flow shown again, as when a failover put the conversation back a step after the PIN
        // started the payment) leaves the person not knowing whether it went: news of the payment at a later
        // dial is news of it, as a person who typed their PIN reads it.
        else if (screen === undefined || !NOTHING_SENT.test(screen)) {
          c.unacknowledged.push(screen ?? 'no answer');
          c.open = true;
        }
        return;
      }
    }
  }

  async function ussd(c: Conversation): Promise<void> {
    let sessions = 0;
    // A note at a new dial (the menu follows it) telling them to start again is about the payment, as is a
    // screen saying nothing was sent; an error ending the dial itself is about that dial, and they dial again.
    const look = async (): Promise<Look> => {
      const screen = await ussdSession(c, sessions++).dial();
      if (screen === undefined) return { kind: 'nothing' };
      if (OUTCOME.test(screen)) return { kind: 'told' };
      const aboutThePayment = screen.startsWith('CON ') || NOTHING_SENT.test(screen);
      return aboutThePayment && START_OVER.test(screen) && !isNews(screen)
        ? { kind: 'start-again', text: screen }
        : { kind: 'nothing' };
    };
    for (let attempt = 0, since = Date.now(); tryAgain(attempt, since); attempt++) {
      if (attempt > 0) {
        c.restarts++;
        await sleep(restartPause(attempt)); // timer-ok: a person waiting before starting over (restartPause)
      }
      await payOverUssd(c, ussdSession(c, sessions++));
      // Acknowledged: dial again now and then until the outcome shows (it is kept for the next dial).
      if (c.confirmed && (await follow(c, 1000, look)) === 'done') return;
    }
    // Out of attempts with a confirmation that got no answer: one more dial, as a person would, to see whether
    // it went (the outcome, or news of it, is kept for the next dial).
    if (c.confirmed || !c.open) return;
    const dial = () => ussdSession(c, sessions++).dial();
    const screen = await until('a screen at a dial', dial, { timeoutMs: options.lookForMs, everyMs: 1000 }).catch(
      () => undefined,
    );
    if (screen === undefined || !isNews(screen)) return;
    acknowledge(c, 'news');
    if (OUTCOME.test(screen)) c.told = true;
    else await follow(c, 1000, look);
  }

  // ---------------------------------------------------------------- Telegram

  let updateId = 1;

  async function telegram(c: Conversation): Promise<void> {
    const chatId = Number(c.chat.slice('telegram:'.length));
    const from = { id: chatId, is_bot: false, first_name: 'Chaos' };
    const chat = { id: chatId, type: 'private' as const, first_name: 'Chaos' };
    const log = bot.chat(chatId);
    let turn = c.index;
    /** Delivers an update as Telegram does: again, a little later, while the webhook call fails. */
    const deliver = async (update: Record<string, unknown>, label: string): Promise<void> => {
      const request: Request = {
        path: '/telegram/webhook',
        headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': options.telegramSecret },
        body: JSON.stringify(update),
      };
      for (let delivery = 0; delivery < TELEGRAM_REDELIVERIES; delivery++) {
        // timer-ok: Telegram's own schedule of redeliveries (1, 2, 4, 4, 4 s), which the run plays.
        if (delivery > 0) await sleep(Math.min(1000 * 2 ** (delivery - 1), 4000));
        const shownBefore = log.texts.length;
        const sentAt = Date.now();
        let answer: Answer | undefined;
        try {
          answer = await transport.deliver(turn++, request);
        } catch (error) {
          if (!(error instanceof NoAnswer)) throw error;
          note(c, `${label} -> no answer (Telegram delivers it again)`, error.instance, sentAt);
          continue;
        }
        const shown = log.texts.slice(shownBefore).join(' | ');
        note(c, `${label} -> ${answer.status}${shown ? `: ${shown}` : ''}`, answer.instance, sentAt);
        if (answer.status === 200) return;
      }
      note(c, `${label}: Telegram gave the update up`);
    };
    const typed = (text: string) =>
      deliver({ update_id: updateId++, message: { message_id: updateId, date: 1, chat, from, text } }, text);
    const press = (messageId: number, data: string, label: string) =>
      deliver(
        {
          update_id: updateId++,
          callback_query: {
            id: `q${updateId}`,
            from,
            chat_instance: 'ci',
            data,
            message: { message_id: messageId, date: 1, chat, text: '...' },
          },
        },
        `press ${label}`,
      );
    /** Texts the chat got from `since` on that say the payment is under way or how it ended. */
    const news = (since: number) => log.texts.slice(since).filter(isNews);
    /** Waits up to the user's patience for a message after the first `since`; whether one came. */
    const waitForMessage = (since: number) =>
      until('a message in the chat', () => log.texts.length > since, {
        timeoutMs: TELEGRAM_PATIENCE_MS,
        everyMs: 250,
      }).catch(() => false);

    /** The final confirmation of the last attempt: where its answer starts in the chat. */
    let confirmedFrom: number | undefined;
    /** One payment attempt from /pay; resolves once acknowledged, or when the user must start over. */
    const pay = async (): Promise<void> => {
      const before = log.texts.length;
      await typed('/pay');
      if (!(await waitForMessage(before))) return;
      for (let step = 0; step < 20; step++) {
        // Paying again after a confirmation that got no answer: news of that payment reaching the chat
        // meanwhile stops them, as it would a person reading it.
        if (confirmedFrom !== undefined && news(confirmedFrom).length > 0) return acknowledge(c, 'news');
        const shown = bot.latest(chatId);
        if (!shown) return;
        const d = decide(shown.text, 'telegram', c.amount);
        if (d.kind === 'unknown') return;
        const since = log.texts.length;
        if (d.kind === 'text') await typed(d.value);
        else {
          const button = shown.buttons.find(([label]) => d.label.test(label));
          if (!button) return;
          await press(shown.messageId, button[1], button[0]);
        }
        const answered = await waitForMessage(since);
        if (d.final) {
          const got = log.texts.slice(since);
          // Told plainly that nothing was sent: that confirmation waits for no news (as over USSD).
          confirmedFrom = got.some((t) => NOTHING_SENT.test(t)) && news(since).length === 0 ? undefined : since;
          if (news(since).length > 0) acknowledge(c, 'answer');
          else c.unacknowledged.push(answered ? got.join(' | ') : 'nothing shown');
          return;
        }
        if (!answered) return;
      }
    };
    /** Reads the chat: the outcome anywhere in it; "start again" among the messages since the last look, with no news. */
    let looked = 0;
    const look = async (): Promise<Look> => {
      const fresh = log.texts.slice(looked);
      looked = log.texts.length;
      if (log.texts.some((t) => OUTCOME.test(t))) return { kind: 'told' };
      const again = fresh.find((t) => START_OVER.test(t));
      return again !== undefined && !fresh.some(isNews) ? { kind: 'start-again', text: again } : { kind: 'nothing' };
    };

    for (let attempt = 0, since = Date.now(); tryAgain(attempt, since); attempt++) {
      if (attempt > 0) {
        c.restarts++;
        await sleep(restartPause(attempt)); // timer-ok: a person waiting before starting over (restartPause)
      }
      // Before paying again: has the chat said anything about the payment since it was confirmed?
      if (attempt > 0 && !c.confirmed && confirmedFrom !== undefined && news(confirmedFrom).length > 0)
        acknowledge(c, 'news');
      if (!c.confirmed) await pay();
      if (!c.confirmed) continue;
      looked = confirmedFrom ?? log.texts.length;
      if ((await follow(c, 500, look)) === 'done') return;
      confirmedFrom = undefined;
    }
    // Out of attempts with a confirmation that got no answer: a last read of the chat, as a person would.
    if (c.confirmed || confirmedFrom === undefined) return;
    const confirmedAt = confirmedFrom;
    const heard = () => news(confirmedAt).length > 0;
    await until('news of the payment', heard, { timeoutMs: options.lookForMs, everyMs: 250 }).catch(() => false);
    if (news(confirmedFrom).length === 0) return;
    acknowledge(c, 'news');
    looked = confirmedFrom;
    await follow(c, 500, look);
  }

  let lateLooks = 1000;
  return {
    /** Runs one person's conversation to its end (acknowledged and told, or given up). */
    async converse(c: Conversation): Promise<void> {
      c.startedAt = Date.now();
      try {
        if (c.channel === 'ussd') await ussd(c);
        else await telegram(c);
      } finally {
        c.endedAt = Date.now();
      }
    },
    /** One more look for the outcome, as a user coming back later does. */
    async lookAgain(c: Conversation): Promise<void> {
      c.lastLookAt = Date.now();
      const seen =
        c.channel === 'ussd'
          ? await ussdSession(c, lateLooks++).dial()
          : bot.chat(Number(c.chat.slice('telegram:'.length))).texts.join('\n');
      if (seen !== undefined && OUTCOME.test(seen)) c.told = true;
    },
  };
}
