/**
 * Test doubles for the USSD adapter: a scripted Engine with one money-moving effect, an express app on
 * port 0, and a logger whose lines are kept.
 */
import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { createLogger, type Logger } from '../../../src/log.js';
import type {
  Decide,
  Engine,
  Inbound,
  Participant,
  Prompt,
  TurnDecision,
  TurnEngine,
} from '../../../src/conversation/types.js';
import type { Store } from '../../../src/store/types.js';
import { MemoryStore } from '../../../src/store/memory-store.js';
import { addUssdRoutes, type UssdRoutesOptions } from '../../../adapters/ussd/index.js';
import { DirectRoutes } from '../../../src/http/direct-routes.js';
import { keys } from '../../../src/store/keys.js';

export const PIN = '4321';

export const MENU: Prompt = {
  text: 'Welcome to MoMo',
  choices: [
    { id: 'pay', label: 'Pay someone' },
    { id: 'note', label: 'Leave a note' },
    { id: 'bundles', label: 'Buy data' },
  ],
  final: false,
};

/** 24 bundles: more than one screen holds. */
export const BUNDLES = Array.from({ length: 24 }, (_, i) => ({
  id: `b${i + 1}`,
  label: `Bundle ${i + 1}: ${(i + 1) * 100} MB for 30 days`,
}));

/**
 * A small conversation: menu -> pay (amount, PIN -> paid, final) | note (text echoed) | bundles (paged list).
 * A repeated messageId gets the earlier prompt and no second effect, as the real engine promises.
 */
export function scriptedEngine() {
  const seen = new Map<string, Prompt>();
  const state = new Map<string, { at: string; amount?: string }>();
  const inbounds: Inbound[] = [];
  const payments: { phone: string; amount: string }[] = [];

  function step(inbound: Inbound): Prompt {
    const s = state.get(inbound.conversationId) ?? { at: 'menu' };
    state.set(inbound.conversationId, s);
    const go = (at: string, prompt: Prompt) => {
      s.at = at;
      return prompt;
    };
    if (inbound.newSession || inbound.nav === 'home') return go('menu', MENU);
    if (inbound.nav === 'back') {
      if (s.at === 'pin') return go('amount', { text: 'Enter amount', input: 'amount', final: false });
      return go('menu', MENU);
    }
    switch (s.at) {
      case 'menu':
        if (inbound.choice === 'pay') return go('amount', { text: 'Enter amount', input: 'amount', final: false });
        if (inbound.choice === 'note') return go('note', { text: 'Type your note', input: 'text', final: false });
        if (inbound.choice === 'bundles')
          return go('bundles', { text: 'Choose a bundle', choices: BUNDLES, final: false });
        return MENU;
      case 'amount':
        s.amount = inbound.text ?? '';
        return go('pin', { text: `Pay ${s.amount} UGX. Enter PIN`, input: 'pin', final: false });
      case 'pin':
        if (inbound.text !== PIN) return { text: 'Wrong PIN. Enter PIN', input: 'pin', final: false };
        payments.push({ phone: inbound.phoneNumber ?? '', amount: s.amount ?? '' });
        return go('menu', { text: `Paid ${s.amount} UGX. Thank you.`, final: true });
      case 'note':
        return go('menu', { text: `Note saved: ${inbound.text ?? ''}`, final: true });
      case 'bundles':
        return go('menu', { text: `You chose ${inbound.choice ?? inbound.text ?? ''}`, final: true });
      default:
        return MENU;
    }
  }

  const engine: Engine = {
    async handle(inbound) {
      inbounds.push(inbound);
      const earlier = seen.get(inbound.messageId);
      if (earlier) return earlier;
      const prompt = step(inbound);
      seen.set(inbound.messageId, prompt);
      return prompt;
    },
  };
  return { engine, inbounds, payments };
}

/**
 * The engine's turn contract over a scripted `handle`, as the real engine keeps it: the channel's state in
 * the conversation record (`conv:<channel>:<id>`, field `channel`) of `store`, read and written with
 * compare-and-set; a write that loses decides again from the winner's state.
 */
export function withTurns(engine: Engine & Pick<TurnEngine, 'toldLate'>, store: Store): TurnEngine {
  /** The engine's answer to a step and to each answer typed ahead that the channel takes on the screen before. */
  async function stepped<S>(decision: Extract<TurnDecision<S>, { kind: 'step' }>): Promise<S> {
    let prompt = await engine.handle(decision.inbound);
    let taken = 0;
    for (const answer of decision.ahead?.answers ?? []) {
      const action = prompt.final ? undefined : decision.ahead!.take(prompt, answer);
      if (!action) break;
      taken++;
      prompt = await engine.handle({
        ...decision.inbound,
        newSession: undefined,
        ...action,
        messageId: `${decision.inbound.messageId}.${taken}`,
      });
    }
    return decision.after(prompt, taken);
  }
  return {
    handle: (inbound) => engine.handle(inbound),
    ...(engine.toldLate ? { toldLate: engine.toldLate.bind(engine) } : {}),
    async turn<S>(participant: Participant, decide: Decide<S>): Promise<S> {
      const key = keys.conversation(participant);
      for (;;) {
        const stored = await store.get(key);
        const decision = decide((stored?.snapshot as { channel?: S } | undefined)?.channel);
        if (decision.kind === 'reply' && !decision.changed) return decision.state;
        const state = decision.kind === 'reply' ? decision.state : await stepped(decision);
        if ((await store.set(key, { channel: state }, stored?.version ?? null, 600)) !== null) return state;
      }
    },
  };
}

/** A logger writing into `lines` (the raw JSON lines pino would print). */
export function captureLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const logger = createLogger('debug', { write: (line: string) => void lines.push(line) });
  return { logger, lines };
}

export interface TestApp {
  url: string;
  close(): Promise<void>;
}

/** Serves `app` (an express app, or the direct routes in front of one: `direct.serve(app)`) on 127.0.0.1, port 0. */
export async function listen(app: RequestListener): Promise<TestApp> {
  const server = createServer(app).listen(0, '127.0.0.1');
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}

/** The USSD router on a fresh app, with a scripted engine (or `engine`) over a memory store unless given. */
export async function startUssd(
  overrides: Partial<Omit<UssdRoutesOptions, 'engine'>> & {
    engine?: Engine & Pick<TurnEngine, 'toldLate'>;
    store?: Store;
  } = {},
) {
  const scripted = scriptedEngine();
  const { engine = scripted.engine, store = new MemoryStore(), ...options } = overrides;
  const { logger, lines } = captureLogger();
  const app = express();
  const direct = new DirectRoutes();
  addUssdRoutes(app, direct, {
    engine: withTurns(engine, store),
    serviceCode: '*384*123#',
    deadlineMs: 1000,
    logger,
    access: { open: true },
    digestKey: 'test-digest-key',
    simulator: true,
    ...options,
  });
  const served = await listen(direct.serve(app));
  return { ...served, ...scripted, store, logs: lines };
}

export const PHONE = '+256772123456';

/** Posts an Africa's Talking request. */
export async function postAt(url: string, fields: Record<string, string>) {
  const res = await fetch(`${url}/ussd/africastalking`, { method: 'POST', body: new URLSearchParams(fields) });
  return { status: res.status, type: res.headers.get('content-type') ?? '', body: await res.text() };
}

/** Posts a JSON body to /ussd/<gateway>. */
export async function postJson(url: string, gateway: string, body: unknown) {
  const res = await fetch(`${url}/ussd/${gateway}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: JSON.parse(text) as Record<string, any> };
}
