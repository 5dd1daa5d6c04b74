/**
 * Model-based walk of a flow machine, shared by every flow's tests: explores every state reachable with
 * `xstate/graph` getShortestPaths, answering each waiting state with its View's choices, typed answers
 * (valid and invalid) and BACK, and settling each invoked service with every outcome given (successes and
 * ServiceFailures). Reports which states were visited (and prints `<flow>: states visited N/N`) and which
 * catalogue keys the reached views use, so tests can assert both.
 *
 *   const walk = walkFlow(payFlow, { outcomes: { createPayment: [{ output: { id: 'p1', state: 'submitted' } }] } });
 *   expect(walk.missing).toEqual([]);
 *   expect(missingMessages(payFlow, walk.keys)).toEqual([]);
 */
import { getCountryCallingCode } from 'libphonenumber-js';
import type { AnyMachineSnapshot, EventObject } from 'xstate';
import { getShortestPaths, getStateNodes, type StatePath } from 'xstate/graph';
import type { CallInput, CallOutput } from '../../flows/actors.js';
import { MENU_FLOWS } from '../../flows/menu.machine.js';
import { ALREADY_SUBMITTED, type CallName } from '../../flows/calls.js';
import { VENDING_COUNTRY, VENDING_FLOWS } from '../../flows/purchase.js';
import type { FlowId, FlowInput, FlowModule, InputKind, ServiceFailure } from '../../flows/types.js';
import { callerCountry } from '../../src/conversation/engine/country.js';
import { createCatalogue, currentView, viewKeys } from '../../src/conversation/flow/render.js';
import { flowTest, type Answers, type FlowTestOptions } from '../../src/testing/flow-test.js';
import { expect } from 'vitest';

/** How one call of service K ends in the walk. */
export type Outcome<K extends CallName> = { output: CallOutput<K> } | { error: ServiceFailure };
/** Per service, the outcomes to explore, or a function of the call's input giving them. */
export type Outcomes = { [K in CallName]?: Array<Outcome<K>> | ((input: CallInput<K>) => Array<Outcome<K>>) };

export interface WalkOptions {
  /** Changes to {@link sampleInput} (e.g. `{ requirePin: true }` for USSD). */
  input?: Partial<FlowInput>;
  /** Outcomes per service, replacing those of {@link sampleOutcomes} for the services named. */
  outcomes?: Outcomes;
  /**
   * Answers typed in a waiting state, by state path (`awaitingAmount`, `bank.awaitingAccount`). States not
   * named get {@link sampleAnswers} for their View's input kind.
   */
  answers?: Record<string, string[]>;
  /** Most snapshots explored before giving up (xstate/graph throws). Default 50 000: far above any flow. */
  limit?: number;
  /** Print the coverage line. Default true: the suite's output shows each machine's coverage. */
  print?: boolean;
}

export interface Walk {
  flow: string;
  /** One shortest path to every distinct snapshot reached. */
  paths: Array<StatePath<AnyMachineSnapshot, EventObject>>;
  /** Paths (`a.b`) of every state node of the machine. */
  states: string[];
  visited: string[];
  missing: string[];
  /** Catalogue keys used by the views reached, sorted. */
  keys: string[];
  /** The events the walk tries in a snapshot (an invoke's outcomes, choices, typed answers, BACK). */
  events: (snapshot: AnyMachineSnapshot) => EventObject[];
  /** `<flow>: states visited N/N` */
  line: string;
}

/** A FlowInput as the engine would give it on Telegram. */
export function sampleInput(changes: Partial<FlowInput> = {}): FlowInput {
  return {
    runId: 'run-1',
    channel: 'telegram',
    chat: 'telegram:chat-1',
    userId: 'user-1',
    userPhone: '+256772123456',
    requirePin: false,
    defaultCountry: 'UG',
    currencies: ['UGX', 'KES'],
    profile: { lang: 'en' },
    allowedFlows: [...MENU_FLOWS],
    ...changes,
  };
}

/** Answers per input kind: something refused first, then something accepted. */
export const sampleAnswers: Record<InputKind | 'none', string[]> = {
  text: ['', 'School fees'],
  phone: ['12', '0772123456'],
  amount: ['abc', '1500'],
  pin: ['12', '1234'],
  code: ['', '4012345678'],
  none: ['hello'],
};

const failure = (code: ServiceFailure['code'], extra: Partial<ServiceFailure> = {}): { error: ServiceFailure } => ({
  error: { code, ...extra },
});

const collection = {
  id: 'col-1',
  amount: '1500',
  currency: 'UGX',
  phonenumber: '+256772123456',
  status: 'successful',
  reference: 'ref-1',
  remoteTransactionId: 'TX123',
  paymentDate: '2026-01-01T10:00:00Z',
  senderName: 'JANE DOE',
};

/** A success and the typical failures of every service. */
export const sampleOutcomes: Required<{ [K in CallName]: Array<Outcome<K>> }> = {
  verifyPin: [{ output: undefined }, failure('pin_wrong', { message: '2 attempts left' }), failure('pin_locked')],
  startPinChange: [
    { output: undefined },
    failure('pin_wrong', { message: '2 attempts left' }),
    failure('code_wrong'),
    failure('code_expired'),
    failure('pin_locked'),
    failure('not_allowed'),
  ],
  draftPin: [
    { output: undefined },
    failure('pin_weak', { message: 'length' }),
    failure('pin_weak', { message: 'repeated' }),
    failure('pin_weak', { message: 'run' }),
    failure('pin_weak', { message: 'ownNumber' }),
    failure('code_expired'),
  ],
  savePin: [{ output: undefined }, failure('pin_mismatch'), failure('code_expired')],
  makeLinkCode: [{ output: 'ABCD2345EF' }, failure('too_many_codes'), failure('not_allowed')],
  checkSpend: [
    { output: undefined },
    failure('limit_exceeded', { limit: { per: 'day', max: '500000', spent: '1500000', currency: 'UGX' } }),
    failure('limit_exceeded', { limit: { per: 'payment', max: '500000', currency: 'UGX' } }),
    failure('not_allowed'),
    failure('connection'),
  ],
  reserveSpend: [{ output: undefined }, failure('limit_exceeded'), failure('not_allowed')],
  lookupContact: [
    {
      output: {
        known: true,
        registered: true,
        firstName: 'Jane',
        lastName: 'Doe',
        nameOnNetwork: 'JANE DOE',
        networkName: 'MTN',
      },
    },
    { output: { known: false, registered: false } },
    // New to this user, named by the network when someone here verified it: its name is offered.
    { output: { known: false, registered: true, nameOnNetwork: 'SARAH NAKATO', networkName: 'MTN' } },
  ],
  verifyContact: [
    {
      output: {
        known: true,
        registered: true,
        firstName: 'Jane',
        lastName: 'Doe',
        nameOnNetwork: 'JANE DOE',
        networkName: 'MTN',
      },
    },
    {
      output: {
        known: true,
        registered: true,
        firstName: 'Jane',
        lastName: 'Doe',
        nameOnNetwork: 'JOHN OKELLO',
        networkName: 'MTN',
      },
    },
    { output: { known: true, registered: false, firstName: 'Jane', lastName: 'Doe' } },
    failure('validation', { fields: { phone_number: ['Invalid phone number'] } }),
    failure('connection'),
  ],
  createPayment: [
    { output: { id: 'pay-1', state: 'submitted', shortRef: 'MC-7KQ4XZ' } },
    { output: { ...ALREADY_SUBMITTED, shortRef: 'MC-7KQ4XZ' } },
    failure('validation', { fields: { amount: ['Insufficient balance'] } }),
    failure('connection'),
  ],
  // No bank for the person's country (an empty list) is tested in pay.machine.test.ts: here it would loop the
  // simple paths back to the first screen.
  listBanks: [{ output: [{ id: 'bank-1', name: 'Stanbic' }] }, failure('service')],
  // One answer: each more would walk the whole flow again behind it (pay.machine.test.ts tests none and a failure).
  // A payee paid mobile money in a currency (named on the amount screen when there are several) and a bank account.
  recentPayees: [
    {
      output: [
        { kind: 'money', phone: '+256772000001', name: 'Sarah Nakato', currency: 'KES' },
        {
          kind: 'bank',
          phone: '+256772000002',
          currency: 'UGX',
          bank: {
            id: 'bank-1',
            name: 'Stanbic',
            accountNumber: '0123456789',
            accountName: 'Mary Akello',
            email: 'm@x.co',
          },
        },
      ],
    },
  ],
  recentPayment: [
    { output: null },
    { output: { ref: 'run-0:pay', minutesAgo: 3, state: 'completed' } },
    { output: { ref: 'run-0:pay', minutesAgo: 9, state: 'held', shortRef: 'MP-7KQ4XZ' } },
    { output: { ref: 'run-0:pay', minutesAgo: 9, state: 'submitted', shortRef: 'MP-7KQ4XZ' } },
    failure('unknown'),
  ],
  createCollectionRequest: [
    { output: { id: 'req-1', status: 'pending', mfscode: '*165#', shortRef: 'MC-7KQ4XZ' } },
    { output: { ...ALREADY_SUBMITTED, shortRef: 'MC-7KQ4XZ' } },
    failure('validation', { fields: { phonenumber: ['Invalid'] } }),
    failure('connection'),
  ],
  claimCollection: [{ output: [collection] }, { output: [] }, failure('not_found')],
  latestCollections: [{ output: [collection] }, { output: [] }, failure('rate_limited')],
  listDataBundles: [
    { output: [{ datacode: 'd1', name: '1GB', allowance: '1GB', price: '1000', validity: '30 days' }] },
    { output: [] },
    failure('service'),
  ],
  purchaseData: [
    { output: { reference: 'ref-d1', status: 'successful', shortRef: 'MC-7KQ4XZ' } },
    { output: { ...ALREADY_SUBMITTED, shortRef: 'MC-7KQ4XZ' } },
    failure('connection'),
  ],
  listPinBundles: [{ output: [{ amount: '3500', available: 10, description: 'WAEC result checker' }] }, { output: [] }],
  validateCandidate: [{ output: { name: 'JOHN PUPIL', gsmNo: '+2348012345678' } }, failure('not_found')],
  purchasePin: [
    { output: { reference: 'ref-p1', status: 'successful', pins: ['1234-5678'], shortRef: 'MC-7KQ4XZ' } },
    { output: { ...ALREADY_SUBMITTED, shortRef: 'MC-7KQ4XZ' } },
    failure('connection'),
  ],
};

/** `['a', 'b']` -> `{ a: 'b' }`, the state value that matches a state node. */
function valueOf(path: string[]): string | Record<string, unknown> {
  const [head, ...rest] = path;
  return rest.length === 0 ? (head as string) : { [head as string]: valueOf(rest) };
}

/** Walks every state of the flow's machine; see the file comment. */
export function walkFlow(module: FlowModule, options: WalkOptions = {}): Walk {
  const machine = module.machine;
  const nodes = getStateNodes(machine);
  const pathOf = new Map(nodes.map((n) => [n.id, n.path.join('.')]));
  const outcomes: Outcomes = { ...sampleOutcomes, ...options.outcomes };

  const viewOf = (snapshot: AnyMachineSnapshot) => {
    try {
      return currentView(snapshot);
    } catch (error) {
      throw new Error(`${module.id}: the view of ${JSON.stringify(snapshot.value)} throws: ${String(error)}`, {
        cause: error,
      });
    }
  };

  const eventsOf = (snapshot: AnyMachineSnapshot): EventObject[] => {
    if (snapshot.status !== 'active') return [];
    const events: Array<{ type: string; [field: string]: unknown }> = [];
    for (const [id, child] of Object.entries(
      snapshot.children as Record<string, { src?: unknown; options?: { input?: unknown } }>,
    )) {
      const given = outcomes[child.src as CallName] as
        Array<Outcome<CallName>> | ((input: unknown) => Array<Outcome<CallName>>) | undefined;
      const list = typeof given === 'function' ? given(child.options?.input) : (given ?? []);
      for (const outcome of list) {
        events.push(
          'output' in outcome
            ? { type: `xstate.done.actor.${id}`, output: outcome.output, actorId: id }
            : { type: `xstate.error.actor.${id}`, error: outcome.error, actorId: id },
        );
      }
    }
    const view = viewOf(snapshot);
    if (view) {
      for (const choice of view.choices ?? []) events.push({ type: 'CHOSEN', id: choice.id });
      const viewNode = Object.keys(snapshot.getMeta())
        .filter((id) => pathOf.has(id))
        .at(-1);
      const typed = options.answers?.[pathOf.get(viewNode ?? '') ?? ''] ?? sampleAnswers[view.input ?? 'none'];
      for (const value of typed) events.push({ type: 'ANSWERED', value });
    }
    events.push({ type: 'BACK' });
    return events;
  };

  const input = sampleInput(options.input);
  const paths = getShortestPaths(machine, {
    input,
    events: eventsOf,
    // Keep only events carrying their payload: xstate/graph adds a bare event per type a state handles.
    filterEvents: (snapshot, event) => eventsOf(snapshot).some((e) => JSON.stringify(e) === JSON.stringify(event)),
    limit: options.limit ?? 50_000,
  }) as Array<StatePath<AnyMachineSnapshot, EventObject>>;

  // A state left at once by an eventless transition (`always`) is never where a flow waits: not a state to visit.
  const states = nodes.filter((n) => n.always === undefined || n.always.length === 0).map((n) => n.path.join('.'));
  const reached = new Set<string>();
  const keys = new Set<string>();
  for (const { state } of paths) {
    for (const node of nodes) if (state.matches(valueOf(node.path) as never)) reached.add(node.path.join('.'));
    const view = viewOf(state);
    if (view) for (const key of viewKeys(view)) keys.add(key);
  }
  const visited = states.filter((s) => reached.has(s));
  const line = `${module.id}: states visited ${visited.length}/${states.length}`;
  if (options.print ?? true) console.log(line);
  return {
    flow: module.id,
    paths,
    states,
    visited,
    missing: states.filter((s) => !reached.has(s)),
    keys: [...keys].sort(),
    events: eventsOf,
    line,
  };
}

/** Keys absent from the catalogue of this flow (with the common messages), as `<lang>:<key>`. */
export function missingMessages(module: FlowModule, keys: Iterable<string>): string[] {
  const { messages } = createCatalogue([module]);
  const missing: string[] = [];
  for (const key of keys)
    for (const lang of ['en', 'sw'] as const) if (!(key in messages[lang])) missing.push(`${lang}:${key}`);
  return missing;
}

/**
 * The events of a small model for getSimplePaths: every sample outcome of the running call, every choice on
 * screen, one valid answer for the screen's input, and BACK. Invalid answers are left out so the simple paths
 * stay few.
 */
export function validEvents(snapshot: AnyMachineSnapshot): Array<{ type: string; [field: string]: unknown }> {
  const view = currentView(snapshot);
  const settle = Object.entries(snapshot.children as Record<string, { src: CallName }>).flatMap(([id, child]) =>
    (sampleOutcomes[child.src] as Array<Outcome<CallName>>).map((o) =>
      'output' in o
        ? { type: `xstate.done.actor.${id}`, output: o.output }
        : { type: `xstate.error.actor.${id}`, error: o.error },
    ),
  );
  const typed =
    view?.input && { text: 'Jane', phone: '0772123456', amount: '1500', pin: '1234', code: 'TX123' }[view.input];
  return [
    ...settle,
    ...(view?.choices ?? []).map((c) => ({ type: 'CHOSEN', id: c.id })),
    ...(typed ? [{ type: 'ANSWERED', value: typed }] : []),
    { type: 'BACK' },
  ];
}

/** The number of flowTest's default person on a phone (a Ugandan number of the demo's `*` rule). */
export const UGANDAN = '+256772123456';
/** A Nigerian number of the demo's `*` rule: offered the vending flows (data bundles, exam pins), priced in naira. */
export const NIGERIAN = '+2348031234567';

/**
 * The FlowInput the kit's engine gives a flow opened on a phone by flowTest's person of number `user` (the demo's
 * `*` rule, the flows its role may start there; the menu's run is run-1): walk with it to compare.
 */
export function onAPhone(user = UGANDAN): Partial<FlowInput> {
  const sells = user.startsWith(`+${getCountryCallingCode(VENDING_COUNTRY)}`);
  return {
    runId: 'run-2',
    channel: 'ussd',
    chat: `ussd:${user}`,
    userId: user,
    userPhone: user,
    defaultCountry: callerCountry(user, 'ussd', { defaultCountry: 'UG' }),
    requirePin: true,
    nameMatchAffectsPayment: true,
    allowedFlows: (['pay', 'request', 'check', 'data', 'pin'] as FlowId[]).filter(
      (flow) => sells || !VENDING_FLOWS.includes(flow),
    ),
  };
}

/** {@link onAPhone} of flowTest's default person. */
export const ON_A_PHONE: Partial<FlowInput> = onAPhone();

/** Every ServiceFailure code a call may end with. */
export const SERVICE_FAILURE_CODES: Array<ServiceFailure['code']> = [
  'validation',
  'duplicate',
  'rate_limited',
  'unauthenticated',
  'forbidden',
  'not_found',
  'service',
  'connection',
  'not_allowed',
  'limit_exceeded',
  'pin_wrong',
  'pin_locked',
  'approvals_unavailable',
  'unknown',
];

type Path = StatePath<AnyMachineSnapshot, EventObject>;

/**
 * The paths that are not a prefix of another path. Shortest paths form a tree (each is the path to its
 * predecessor plus one step), so walking these walks every step of every path once.
 */
export function leafPaths(paths: Path[]): Path[] {
  const keyOf = (path: Path) => path.steps.map((s) => JSON.stringify(s.event)).join('\n') + '\n';
  const keys = paths.map(keyOf);
  // Sorted, the keys a key is a prefix of come right after it.
  const sorted = [...keys].sort();
  const extended = new Set(sorted.filter((key, i) => sorted[i + 1]?.startsWith(key)));
  return paths.filter((_, i) => !extended.has(keys[i]!));
}

const SETTLED = /^xstate\.(done|error)\.actor\./;

/**
 * Each path of the model (walked with {@link onAPhone} of the person `options.user`), acted out by that person
 * on a phone with the kit (flowTest: the real engine, USSD's hop handler): the fake service answers each call as
 * the path settles it, and at every screen the stored flow is in the model's state with its context. The busy
 * states between two screens are not seen by a person: a path ending in one is walked to its last screen. Only
 * the {@link leafPaths} are walked: each step of every path once.
 */
export async function expectWalkedOnAPhone(
  id: FlowId,
  paths: Array<StatePath<AnyMachineSnapshot, EventObject>>,
  options: FlowTestOptions = {},
): Promise<void> {
  const walked = new Set<string>();
  for (const path of leafPaths(paths)) {
    // Each person event with the settles after it, the dial first; the screen each ends on.
    const groups: Array<{ event?: EventObject; state: AnyMachineSnapshot }> = [{ state: path.steps[0]!.state }];
    const outcomes: Partial<Record<CallName, Array<Outcome<CallName>>>> = {};
    for (let i = 1; i < path.steps.length; i++) {
      const { event, state } = path.steps[i]!;
      const settled = SETTLED.exec(event.type);
      if (settled) {
        const child = (path.steps[i - 1]!.state.children as Record<string, { src?: unknown }>)[
          (event as { actorId?: string }).actorId ?? ''
        ];
        const outcome = (
          settled[1] === 'done'
            ? { output: (event as { output?: unknown }).output }
            : { error: (event as { error?: unknown }).error }
        ) as Outcome<CallName>;
        (outcomes[child?.src as CallName] ??= []).push(outcome);
        groups.at(-1)!.state = state;
      } else groups.push({ event, state });
    }
    while (groups.length > 0 && groups.at(-1)!.state.hasTag('busy')) groups.pop();
    const key = JSON.stringify(groups.map((g) => g.event));
    if (groups.length === 0 || walked.has(key)) continue;
    walked.add(key);

    const answers: Answers = Object.fromEntries(
      Object.entries(outcomes).map(([call, list]) => [call, () => list.shift() ?? { error: { code: 'unknown' } }]),
    );
    const t = flowTest(id, { ...options, answers: { ...answers, ...options.answers } });
    try {
      for (const { event, state } of groups) {
        const step = event as { type: string; id?: string; value?: string } | undefined;
        if (!step) await t.dial();
        else if (step.type === 'CHOSEN') await t.choose(step.id!);
        else if (step.type === 'ANSWERED') await t.send(step.value!);
        else await t.back();
        const where = `${key}: after ${JSON.stringify(step ?? 'the dial')}`;
        if (state.status === 'done') {
          const next = (state.output as { next?: FlowId } | undefined)?.next;
          if (next) expect(t.flow()?.id, where).toBe(next);
          else expect(t.prompt?.final, where).toBe(true);
          continue;
        }
        expect(t.flow()?.snapshot.value, where).toEqual(state.value);
        // As stored: through JSON.
        expect(t.flow()?.snapshot.context, where).toEqual(JSON.parse(JSON.stringify(state.context)));
      }
    } finally {
      await t.close();
    }
  }
}
