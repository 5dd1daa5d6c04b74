/**
 * The conventions every flow follows. Flows are pure XState v5 machines: no I/O, no clock, no randomness.
 *
 * - Each state that waits for the user has `meta: { view: (context) => View }`. The engine renders the
 *   View through the message catalogue (flows/messages) into a Prompt.
 * - States running a service call carry `tags: ['busy']` and invoke a named fromPromise actor; the engine
 *   waits while the snapshot has the tag `busy` (up to the channel's deadline). A state whose invoke input
 *   holds a secret (a PIN or a code, taken from the event, never from context) also carries the tag `secret`:
 *   the engine never stores that snapshot. A final state tagged `secret` shows a secret (a link code): the
 *   engine shows that screen once and keeps neither it nor the flow. A state whose call moves money (creates a payment, a collection
 *   request or a purchase under the flow's Duplicate-Check-Key) also carries the tag `money`: once it was
 *   entered, the engine never tells the user to start again, only that it is being confirmed.
 * - Events the engine sends (and only these):
 *     { type: 'ANSWERED', value }   free text typed for the current state's input
 *     { type: 'CHOSEN', id }        a choice of the current View picked
 *     { type: 'BACK' }              one step back (every waiting state handles it)
 *   Home and cancel are handled by the engine (it leaves the flow).
 * - Invalid input stays in the state and sets `context.error` to a message key; the view shows it.
 * - Side effects are services (flows/calls.ts), bound by the engine with machine.provide({ actors }).
 *   Services never throw MomoError into a flow: they reject with a ServiceFailure.
 * - A flow's final state has `output: FlowOutput`, and `meta.outcome(context)`: how the run ended, for the
 *   funnel (FlowOutcome; flows/outcome.ts reads it).
 */
export type FlowId = 'menu' | 'pay' | 'request' | 'check' | 'data' | 'pin' | 'changePin' | 'link';
/** The languages that ship: English, Kiswahili and French (the region's third; DRC, Rwanda, Burundi). */
export type Lang = 'en' | 'sw' | 'fr';
/** Every language, in the order the language menu offers them. */
export const LANGS: readonly Lang[] = ['en', 'sw', 'fr'];

/** True when `value` names a language that ships (a stored profile's language is read with it). */
export function isLang(value: unknown): value is Lang {
  return LANGS.some((lang) => lang === value);
}

export type Params = Record<string, string | number>;

/** What a screen asks to be typed: channels show a fitting keyboard or field (a PIN hidden). */
export type InputKind = 'text' | 'phone' | 'amount' | 'pin' | 'code';

/** A reference to catalogue text: a key like `pay.askAmount` and its parameters. */
export interface Text {
  key: string;
  params?: Params;
}

export interface ViewChoice {
  id: string;
  /** Catalogue text, or a literal label (names and bundle descriptions from the service). */
  text?: Text;
  label?: string;
}

export interface View {
  /** Main text of the screen. */
  text: Text;
  /** Lines shown above the text (e.g. an error reason as Text). */
  error?: Text;
  /** A line shown above the text that is not a refusal: what the caller must not miss (a payee abroad). */
  notice?: Text;
  choices?: ViewChoice[];
  input?: InputKind;
  final?: boolean;
  /** The first screen (the main menu): nothing to go back to, so no Back (nor Home) is offered. */
  top?: boolean;
  /**
   * The same screen as the record keeps it (the journal's telling, /ops): its secrets (exam pins) replaced by
   * their count. Absent when the screen holds none. The owner is shown `text`; nobody else ever reads it.
   */
  masked?: Text;
}

/** A state's `meta`, of a flow whose context is `Context` (read back from a snapshot: of a context not known). */
export interface StateMeta<Context = unknown> {
  view: (context: Context) => View;
  /** Final states only: how a run that ends here ended (flows/outcome.ts). */
  outcome?: (context: Context) => FlowOutcome;
}

/**
 * How a flow run ended, counted per flow by the funnel (src/ops/funnel.ts):
 * - `paid`: the service took the money-moving call (a payment created, a purchase made); its later states
 *   arrive by webhook and are not counted here;
 * - `done`: the flow did what was asked without moving money (a request sent, a collection found or not, a
 *   menu choice);
 * - `refused`: our access policy said no (not allowed, over a limit, the PIN locked);
 * - `failed`: the service refused or could not be reached, and nothing was sent;
 * - `processing`: still processing: the outcome is not known yet (an answer lost, already submitted earlier);
 * - `cancelled`: the user said no at the summary;
 * - `left`: the user backed out to the menu.
 */
export type FlowOutcome = 'paid' | 'done' | 'refused' | 'failed' | 'processing' | 'cancelled' | 'left';
export const FLOW_OUTCOMES: readonly FlowOutcome[] = [
  'paid',
  'done',
  'refused',
  'failed',
  'processing',
  'cancelled',
  'left',
];

/** What the engine gives every flow at start. */
export interface FlowInput {
  /** Unique per flow run, made by the engine; idempotency keys derive from it. */
  runId: string;
  channel: 'ussd' | 'telegram' | 'slack' | 'whatsapp';
  /** `<channel>:<conversationId>`: put in metadata.chat so notifications find the chat. */
  chat: string;
  userId: string;
  /** The user's own number when known (USSD, WhatsApp), `+` format. */
  userPhone?: string;
  /** Ask for the PIN to confirm money (USSD). */
  requirePin: boolean;
  /**
   * The caller's country (ISO 3166 alpha-2): their number's, else their channel's, else DEFAULT_COUNTRY
   * (src/conversation/engine/country.ts). Numbers typed without a country code are read in it; the examples,
   * the banks and the currencies offered are its; a payee of another country is said to be abroad.
   */
  defaultCountry: string;
  /**
   * The currencies the caller is offered (their country's that the organization and their role allow). Empty when
   * their country has none the organization allows: pay and request say so in one line and end.
   */
  currencies: string[];
  /** Test currencies (BXC) offered besides `currencies` only to pay one of `testNumbers`. Absent: none. */
  testCurrencies?: string[];
  /** The service's test numbers (`+` form), set only with `testCurrencies`. */
  testNumbers?: string[];
  /**
   * The organization's "Name match affects payment" setting as we mirror it (NAME_MATCH_AFFECTS_PAYMENT). Absent
   * or true: a name differing from the network's makes the payment fail, so paying the typed name is not offered.
   */
  nameMatchAffectsPayment?: boolean;
  /**
   * A bank transfer's email may be skipped: the organization's address (BANK_TRANSFER_EMAIL) is sent in its
   * place. Absent or false: the email is asked and required, as the contract requires one.
   */
  bankEmailOptional?: boolean;
  /** What the engine remembers for this user (pin flow: validated codes; see FlowOutput.remember). */
  profile: UserProfile;
  /** Flows this user's role may start (the menu offers these). Absent: none. */
  allowedFlows?: FlowId[];
  /**
   * The person's PIN was reset: Change PIN starts from the reset's one-time code (texted to them), not the old PIN
   * (and the engine starts it before the menu: src/conversation/engine/engine.ts).
   */
  pinReset?: boolean;
}

/**
 * A flow's `context` factory, made total. XState's pure `transition()` builds a throwaway actor of the machine,
 * with no input, at every step; a factory that throws there (reading `input.runId`) costs a stack trace a step.
 * Without input it gives an empty context, which nothing reads.
 */
export function contextFromInput<C>(make: (input: FlowInput) => C): (args: { input: FlowInput | undefined }) => C {
  return ({ input }) => (input === undefined ? ({} as C) : make(input));
}

/** The only events the engine sends a flow (see the conventions above). */
export type FlowEvent = { type: 'ANSWERED'; value: string } | { type: 'CHOSEN'; id: string } | { type: 'BACK' };

export interface RememberedCandidate {
  serviceType: string;
  productCode: string;
  accountNumber: string;
  name: string;
  gsmNo: string;
}

export interface UserProfile {
  lang: Lang;
  candidates?: RememberedCandidate[];
}

export interface FlowOutput {
  /** Menu: the flow to start next. */
  next?: FlowId;
  /** Profile changes to keep for this user (language, remembered candidates). */
  remember?: Partial<UserProfile>;
}

/** Which limit refused an amount, with the figures people are told. */
export interface SpendLimit {
  per: 'payment' | 'day';
  /** The most that may be sent now: the per-payment limit, or what is left of the day's. */
  max: string;
  /** Sent today (the day's limit only). */
  spent?: string;
  currency: string;
}

/** How a service call failed, in plain data (flows cannot instanceof the client's error classes). */
export interface ServiceFailure {
  code:
    | 'validation'
    | 'duplicate'
    | 'rate_limited'
    | 'unauthenticated'
    | 'forbidden'
    | 'not_found'
    | 'service'
    | 'connection'
    | 'not_allowed'
    | 'limit_exceeded'
    | 'pin_wrong'
    | 'pin_locked'
    | 'approvals_unavailable'
    | 'not_recorded'
    | 'pin_weak'
    | 'pin_mismatch'
    | 'code_wrong'
    | 'code_expired'
    | 'too_many_codes'
    | 'unknown';
  /** Field -> messages, for validation. */
  fields?: Record<string, string[]>;
  /**
   * A limit refusal's figures (`limit_exceeded` from the access policy): the most that may still be sent in one
   * payment or in what is left of the day, and what was sent today; decimal strings.
   */
  limit?: SpendLimit;
  /** `pin_weak`: why the PIN may not be chosen (src/people/pin-rules.ts PinWeakness). */
  message?: string;
  /**
   * Our short ref of a create whose answer was lost (`MC-7K2QX`, src/journal/short-ref.ts): it may have been made,
   * and this is the reference the person asks about it by.
   */
  shortRef?: string;
}

export function isServiceFailure(e: unknown): e is ServiceFailure {
  return typeof e === 'object' && e !== null && typeof (e as { code?: unknown }).code === 'string';
}

/**
 * The failures of a create that prove nothing was made: the service refused the request itself, or our own
 * code said no before any call (the access policy, an approvals board that could not take the payment, the
 * journal that could not take the intent of a first attempt (`not_recorded`); today
 * both say no before our record's intent is written, but one that came after it would still have sent nothing).
 * A 429, a 5xx or a lost answer prove nothing: the client repeats a create under its Duplicate-Check-Key, so
 * one of those may end a run whose earlier attempt the service committed.
 */
const MADE_NOTHING: ReadonlySet<ServiceFailure['code']> = new Set([
  'validation',
  'unauthenticated',
  'forbidden',
  'not_found',
  'not_allowed',
  'limit_exceeded',
  'approvals_unavailable',
  'not_recorded',
]);

/**
 * True when a create's failure proves nothing was made, so its record may say refused and nothing waits for
 * it (our record in src/conversation/calls/made-records.ts, the spend given back in flow-calls.ts, the approvals desk, payouts).
 * Anything that is not a ServiceFailure proves nothing.
 */
export function madeNothing(error: unknown): error is ServiceFailure {
  return isServiceFailure(error) && MADE_NOTHING.has(error.code);
}

/** Catalogue text of one language: key -> template with `{param}` placeholders. */
export type Messages = Record<string, string>;

/** What each flow file exports (flows/index.ts lists them all). */
export interface FlowModule {
  id: FlowId;
  // The machine's own types are checked where it is built; the registry only needs to run it.
  machine: import('xstate').AnyStateMachine;
  /**
   * Catalogue entries of this flow, keys prefixed with the flow id (`pay.askAmount`). English is required; a
   * key a language lacks is shown in English. The shipped flows declare every language (Record<Lang, Messages>).
   */
  messages: { en: Messages } & Partial<Record<Lang, Messages>>;
}
