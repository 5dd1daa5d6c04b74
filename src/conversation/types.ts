/**
 * The seams between adapters and the engine. Adapters produce Inbound and render Prompt;
 * nothing channel-specific crosses this line.
 */
import type { FlowId, InputKind, Lang, Params } from '../../flows/types.js';
import type { Address, Channel } from '../store/types.js';

/** Named here too for the adapters, whose seam this is; the store keeps chats under them (src/store). */
export type { Address, Channel };

/**
 * What a channel can do, as its adapter declares it (`adapters/<channel>/capabilities.ts`): the engine branches
 * on these, never on a channel's name (EngineOptions.channels).
 */
export interface ChannelCapabilities {
  /**
   * A message can reach the chat at any time, not only as the answer to a delivery (a chat's late outcome, or
   * a question of the flow, pushed to it). Without it (USSD: one screen per request, in a session the network
   * ends) "processing" ends the session, and a question reached late is seen by nobody.
   */
  pushes: boolean;
  /**
   * An answer the person may have missed is kept for their next dial and shown then (the USSD inbox,
   * channels/ussd-inbox.ts), and the channel may answer a delivery on its own before the engine did
   * (TurnEngine.toldLate), which that dial explains.
   */
  keepsForNextDial: boolean;
  /**
   * PINs and codes are typed here: a screen that keeps nothing (USSD), never a chat whose history would keep
   * them. Money flows ask the PIN (FlowInput.requirePin); Change PIN and Link a chat app are offered here.
   */
  asksPin: boolean;
  /** The user id is the person's phone number, international `+` form (USSD's MSISDN). */
  userIsNumber: boolean;
}

/** What every adapter produces, one per user message / button press / USSD hop. */
export interface Inbound {
  channel: Channel;
  /** The chat (Telegram chat id, Slack `team:user`, USSD phone number, WhatsApp `wa_id`): one conversation per id. */
  conversationId: string;
  /** Who is talking (Telegram user id, Slack user id, USSD phone number, WhatsApp `wa_id`); the access policy keys on it. */
  userId: string;
  /** The channel's own delivery id (Telegram update_id, Slack trigger_id/event_id, USSD sessionId+hop, WhatsApp wamid). */
  messageId: string;
  /** Free-text answer. */
  text?: string;
  /** The id of a Prompt choice the user picked. */
  choice?: string;
  /** Navigation outside the flow's own choices. */
  nav?: 'back' | 'home' | 'cancel';
  /** Start this flow now (a command such as /pay), leaving whatever was in progress. */
  start?: FlowId;
  /** The user's own phone number when the channel knows it (USSD, WhatsApp), international `+` format. */
  phoneNumber?: string;
  /** True on the first hop of a new channel session (USSD dial): the engine shows the menu or news. */
  newSession?: boolean;
  /**
   * A new channel session takes up the flow the last one left unfinished (USSD "Continue where you left
   * off?"): no event, the flow's current screen (its outcome once a service call was made; while one is out,
   * the wait for it). Nothing is stepped, so no call is made again and a PIN is asked again where it was asked.
   */
  resume?: boolean;
}

export interface Choice {
  id: string;
  label: string;
}

/** What the engine returns. Adapters render it; flows never format for a channel. */
export interface Prompt {
  text: string;
  choices?: Choice[];
  input?: InputKind;
  /** The conversation is over (USSD answers END). */
  final: boolean;
  /**
   * A money-moving call of this conversation may have reached the service (the answer is "being confirmed",
   * or comes after such a call): an adapter that fails to show it must not invite the user to start again.
   */
  money?: boolean;
  /** The language of the words, for an adapter's own words around them (USSD `0 Back`, buttons). Absent: English. */
  lang?: Lang;
  /** The screen asks again because the last answer was refused (the flow's error line above it). */
  refused?: boolean;
  /** The first screen (the main menu): adapters offer no Back or Home there, as there is nothing to go back to. */
  top?: boolean;
  /**
   * The screen opens with outcomes kept for the next dial (USSD): the channel lets the user read them (a dial
   * string's answers are not walked past it); the next message of the session proves they were seen.
   */
  noted?: boolean;
  /**
   * The words as the record keeps them (the journal's telling, read by operators): the screen's secrets (exam
   * pins) replaced by their count. Absent when it holds none; adapters show `text`.
   */
  masked?: string;
}

/**
 * A message as its catalogue key and values, so a channel that shows it later (the USSD inbox, at the next dial)
 * says it in the person's language then, not in the one it was written in. `from: 'notify'`: the notifications'
 * catalogue (src/notifications/messages.ts, its short form for the dial); absent: the flows' catalogue.
 */
export interface NoteWords {
  key: string;
  params?: Params;
  from?: 'notify';
}

/** One per chat adapter. */
export interface Notifier {
  /** `words`: the same message as its key and values (NoteWords), for a channel that shows it later. */
  send(address: Address, message: string, words?: NoteWords): Promise<void>;
}

export interface Engine {
  handle(inbound: Inbound): Promise<Prompt>;
}

/** The conversation a channel turn is for, and who is talking in it. */
export type Participant = Pick<Inbound, 'channel' | 'conversationId' | 'userId'>;

/**
 * What one delivery means to a channel that keeps state of its own with the conversation (USSD: the gateway
 * session, its hop and the screen shown), decided from that state as stored:
 * - `reply`: answered from the channel's state alone (a resend, a page turn); the flow is not touched, and
 *   the state is written back only when `changed`;
 * - `step`: the flow takes `inbound`, then each of `ahead`'s answers in the same turn (see {@link Ahead});
 *   `after` turns the engine's answer, and how many answers ahead were taken, into the state to keep, written
 *   in the same compare-and-set as the conversation.
 */
export type TurnDecision<S> =
  | { readonly kind: 'reply'; readonly state: S; readonly changed: boolean }
  | {
      readonly kind: 'step';
      readonly inbound: Inbound;
      readonly ahead?: Ahead;
      readonly after: (prompt: Prompt, taken: number) => S;
    };

/**
 * Answers typed ahead of their screens (a USSD dial string: `*384*123*1*1#` answers `1`, then `1`): after the
 * step of the delivery, the flow takes them one by one in the same turn (one write), each on the screen the
 * last one left, while the flow waits for the user (never into or past a service call) and `take` reads the
 * answer on that screen as a message; undefined stops there (a screen typed in the session, such as a PIN).
 */
export interface Ahead {
  readonly answers: readonly string[];
  take(screen: Prompt, answer: string): Pick<Inbound, 'nav' | 'choice' | 'text'> | undefined;
}

/**
 * A channel's decision on its state as stored (TurnEngine.turn). The engine calls it again whenever the record
 * changed under it (a compare-and-set conflict), so it must be pure: it decides from its arguments alone, and
 * everything the channel needs afterwards is in the decision (and so in the state `turn` resolves to), never
 * in a variable it sets.
 */
export type Decide<S> = (state: S | undefined, conversation?: ConversationView) => TurnDecision<S>;

/** What a channel's decision may know of the conversation besides its own state (TurnEngine.turn). */
export interface ConversationView {
  /**
   * A flow other than the menu waits for the user's answer: no service call is out or was left unfinished,
   * the flow has not ended (no outcome to show) and has not expired. (USSD offers to take up only such a flow.)
   */
  waiting: boolean;
  /**
   * Outcomes are kept for the user's next dial (ussd-inbox.ts): a dial shows them rather than offering to take
   * a flow up (after a Redis failover the flow left may be one whose payment was made meanwhile). Read with
   * the record: a decision answering without a step is made on a record just read, never on one kept in memory.
   */
  notes: boolean;
}

/** The engine as a channel with state of its own uses it (the USSD adapter). */
export interface TurnEngine extends Engine {
  /**
   * One delivery, read and written together with the conversation: one read and one compare-and-set a
   * message. `decide` is pure and may run more than once (again after a conflict: {@link Decide}); resolves to
   * the state kept. Engines that keep flows also tell it what it may know of the conversation (test doubles
   * may not).
   */
  turn<S>(participant: Participant, decide: Decide<S>): Promise<S>;
  /**
   * A channel session ended without a message (a gateway's end-of-session report or release): when the channel
   * state kept with the conversation says it is that session (`isCurrent`) and the flow waits for the user,
   * its run is told abandoned at its step (EngineOptions.onTransition). Reads the record; changes nothing.
   * Engines without flows to count (test doubles) leave it out: such reports are then acknowledged, not counted.
   */
  sessionEnded?<S>(participant: Participant, isCurrent: (state: S | undefined) => boolean): Promise<SessionEnd>;
  /**
   * The channel answered delivery `messageId` on its own, "taking longer than expected, dial again to see the
   * result", before the turn did (the USSD router's guard): the person's next dial is told what became of it,
   * and "nothing was sent" when nothing will tell them (told-late.ts unseenAfterToldLate). Never throws. Engines
   * without flows (test doubles) leave it out.
   */
  toldLate?(participant: Participant, messageId: string): Promise<void>;
}

/** What a channel's end-of-session report did (TurnEngine.sessionEnded). */
export type SessionEnd = { counted: true } | { counted: false; reason: string };
