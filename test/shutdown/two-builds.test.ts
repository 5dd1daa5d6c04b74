/**
 * A rolling deploy of a release that changed the flows, over live USSD conversations and a payment in flight.
 *
 * Two builds run at once as real processes over one Redis and one PostgreSQL database: this repository's
 * product (the earlier build) and a later one the test makes from a copy of its sources, whose pay flow has
 * `awaitingAmount` renamed to `enteringAmount` (with a declared migration), `awaitingDescription` removed (no
 * migration), the money step `submitting` renamed to `sending` (no migration: a run stored there must still
 * finish), a step added after the summary and a context field added. People sit at every step of the pay
 * flow on the earlier build (the menu, the payee's kind, number and names, the amount, the summary, a note,
 * the PIN, and one waiting for a payment the service holds back) when the later build starts; each person's
 * next hop, in the same gateway session, goes to the later build, some go back to the earlier one, then the
 * earlier processes are killed (SIGKILL, the held payment's among them) and a second process of the later
 * build starts. The held creation is let through once the later build repeats it under the same key.
 *
 * One Redis server of the test's own holds both builds' records and queues; the service's notifications reach
 * whichever process is up through a balancer, so jobs are queued and worked by either build while both run.
 * Every person ends paid exactly once (the service's payments, by chat), told so and shown the payment's
 * arrival; every screen either
 * continues the conversation, says in one line that the service was updated and shows the start, or (the
 * earlier build reading the later one's record) asks to try again in a moment; never an error.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { payMachine } from '../../flows/pay.machine.js';
import { flowShape } from '../../flows/shape.js';
import { hashPin } from '../../src/conversation/services/access-policy.js';
import { keys } from '../../src/store/keys.js';
import { startOwnRedis, stopAll } from '../redis/servers.js';
import { until } from '../until.js';
import { Balancer } from '../chaos/proxies.js';
import {
  dropProductDatabase,
  startProductProcess,
  startService,
  type ProductProcess,
  type Service,
} from './product.js';

const API_KEY = 'two-builds-key';
const CALLBACK_TOKEN = 'two-builds-callback-token-0123';
const GATEWAY = `/ussd/africastalking/${CALLBACK_TOKEN}`;
const ROOT = new URL('../../', import.meta.url).pathname;

/** The steps of the pay flow people sit at when the later build starts, each one person's. */
const STEPS = [
  'menu',
  'kind',
  'phone',
  'firstName',
  'lastName',
  'amount',
  'confirm',
  'note',
  'pin',
  'waiting',
  'paid',
] as const;
type Step = (typeof STEPS)[number];
const phoneOf = (i: number) => `+2567018770${String(i + 10)}`;
const PHONES = STEPS.map((_, i) => phoneOf(i));
const WAITING = PHONES[STEPS.indexOf('waiting')]!;

const payer = { flows: ['pay'], perPaymentLimit: { UGX: '100000' }, dailyLimit: { UGX: '100000' } };
const POLICY = JSON.stringify({
  roles: { payer },
  users: {
    telegram: {},
    slack: {},
    ussd: Object.fromEntries(PHONES.map((phone) => [phone, { role: 'payer', pin: hashPin('1234') }])),
  },
});

/** A screen of one of the steps: what the person has before them. */
const AT: Record<Exclude<Step, 'waiting' | 'paid'>, RegExp> = {
  menu: /What would you like to do\?/,
  kind: /What do you want to send\?/,
  phone: /Enter the phone number of the person to pay/,
  firstName: /enter the first name/i,
  lastName: /Enter the last name/,
  amount: /Enter the amount/,
  confirm: /^CON Send [\d,]+ UGX/,
  note: /Enter a note for the recipient/,
  pin: /Enter your PIN/,
};
const SENT = /Sent: [\d,]+ UGX to .+\. Ref MC-[A-Z0-9]+\.|It was sent; you will be notified of the result/;
const PROCESSING = /still working on it/;
const UPDATED = /^CON The service was updated, so we started again\.\n/;
const TRY_AGAIN = /^END The service is being updated\. Please try again in a moment/;
/** What no screen may say: an error, a stranded conversation. */
const ERROR = /went wrong|cannot reach|does not exist|not allowed/i;

/** One person on a phone, as Africa's Talking posts their hops: one gateway session at a time. */
class Person {
  sessionId = '';
  answers: string[] = [];
  readonly screens: Array<{ build: string; screen: string }> = [];
  /** Chose "Add a note" once (the earlier build's summary offers it). */
  noted = false;
  constructor(
    readonly step: Step,
    readonly phone: string,
    readonly amount: string,
  ) {}

  get last(): string {
    return this.screens.at(-1)?.screen ?? '';
  }

  /** A hop to `product`: a dial when no gateway session is open, else `answer`. */
  async hop(product: Build, answer?: string): Promise<string> {
    if (!this.sessionId || this.last.startsWith('END')) {
      this.sessionId = `two-builds-${Math.random().toString(36).slice(2)}`;
      this.answers = [];
    } else if (answer !== undefined) this.answers.push(answer);
    const res = await fetch(`${product.process.url}${GATEWAY}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        sessionId: this.sessionId,
        serviceCode: '*384*123#',
        phoneNumber: this.phone,
        networkCode: '63902',
        text: this.answers.join('*'),
      }),
    });
    const screen = await res.text();
    this.screens.push({ build: product.name, screen });
    expect(res.status, `${this.step}: ${screen}`).toBe(200);
    expect(screen, `${this.step} on ${product.name}`).not.toMatch(ERROR);
    return screen;
  }

  /** The answer to the screen before them, as this person means it. */
  respond(): string | undefined {
    const screen = this.last;
    if (screen === '' || screen.startsWith('END')) return undefined;
    if (/Continue where you left off/.test(screen)) return choice(screen, /^Continue$/);
    if (AT.menu.test(screen)) return choice(screen, /^Pay someone$/);
    if (/What do you want to send|Pay whom/.test(screen)) return choice(screen, /^(Mobile money|Someone new)$/);
    if (AT.phone.test(screen)) return '0772000001';
    if (/The network knows this number as/.test(screen)) return choice(screen, /^Pay /);
    if (AT.firstName.test(screen)) return 'Sarah';
    if (AT.lastName.test(screen)) return 'Nakato';
    if (AT.amount.test(screen)) return this.amount;
    if (AT.confirm.test(screen)) {
      if (this.step === 'note' && !this.noted && /Add a note/.test(screen)) {
        this.noted = true;
        return choice(screen, /^Add a note$/);
      }
      return choice(screen, /^Confirm$/);
    }
    if (AT.note.test(screen)) return 'rent';
    if (AT.pin.test(screen)) return '1234';
    throw new Error(`${this.step}: no answer to ${JSON.stringify(screen)}`);
  }

  /** A dial in a new gateway session: what a person sees first (an outcome kept for them, or a resume). */
  dial(product: Build): Promise<string> {
    this.sessionId = '';
    return this.hop(product);
  }

  /** Hops to `product` until `done` holds of the screen (a dial first when no session is open). */
  async walk(product: Build, done: (screen: string) => boolean, hops = 20): Promise<string> {
    for (let i = 0; i < hops; i++) {
      if (this.screens.length > 0 && done(this.last)) return this.last;
      await this.hop(product, this.respond());
    }
    throw new Error(`${this.step}: not done after ${hops} hops: ${JSON.stringify(this.screens.slice(-4))}`);
  }
}

/** The number of the choice whose label matches `label`. */
function choice(screen: string, label: RegExp): string {
  for (const line of screen.split('\n')) {
    const m = /^(\d+)\. (.*)$/.exec(line);
    if (m && label.test(m[2]!)) return m[1]!;
  }
  throw new Error(`no choice ${label} on ${JSON.stringify(screen)}`);
}

interface Build {
  name: string;
  process: ProductProcess;
}

/**
 * The later build's sources: a copy of this repository's src/, flows/ and adapters/ with the pay flow changed.
 * Each change is checked to have applied, so a rewrite of the flow fails here rather than test nothing.
 */
function makeLaterBuild(): string {
  const dir = mkdtempSync(join(tmpdir(), 'momo-later-build-'));
  for (const part of ['src', 'flows', 'adapters', 'package.json', 'tsconfig.json'])
    cpSync(join(ROOT, part), join(dir, part), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  const edit = (path: string, change: (text: string) => string) => {
    const before = readFileSync(join(dir, path), 'utf8');
    const after = change(before);
    expect(after, path).not.toBe(before);
    writeFileSync(join(dir, path), after);
  };
  const replace = (from: string | RegExp, to: string) => (text: string) => {
    const after = text.replace(from, to);
    expect(after, String(from)).not.toBe(text);
    return after;
  };
  edit('flows/pay.machine.ts', (text) =>
    [
      // A state renamed, with a migration below.
      replace(/\bawaitingAmount\b/g, 'enteringAmount'),
      // The money step renamed with no migration: a run stored there finishes from its record.
      replace(/\bsubmitting\b/g, 'sending'),
      // The note step removed, with no migration.
      replace("  { id: 'note', text: { key: 'pay.addNote' } },\n", ''),
      replace("          { guard: chosen('note'), actions: 'clearError', target: 'awaitingDescription' },\n", ''),
      replace(
        /\n {4}\/\/ Reached only from the summary's "Add a note"[^\n]*\n {4}awaitingDescription: \{[\s\S]*?\n {4}\},/,
        '',
      ),
      // A step added after the summary, filling a context field added.
      replace(
        "{ guard: chosen('confirm'), actions: 'clearError', target: 'checkingRepeat' }",
        "{ guard: chosen('confirm'), actions: 'clearError', target: 'awaitingPurpose' }",
      ),
      replace(
        '    checkingRepeat: {\n',
        `    awaitingPurpose: {
      meta: { view: ask('pay.askDescription', 'text') },
      on: {
        ANSWERED: {
          actions: assign({ purpose: ({ event }) => (event.type === 'ANSWERED' ? event.value : undefined) }),
          target: 'checkingRepeat',
        },
        BACK: back('confirming', 'purpose'),
      },
    },
    checkingRepeat: {\n`,
      ),
      replace('    key: `${input.runId}:pay`,\n', '    key: `${input.runId}:pay`,\n    purpose: undefined,\n'),
      replace('export interface PayContext {\n', 'export interface PayContext {\n  purpose?: string;\n'),
    ].reduce((t, change) => change(t), text),
  );
  edit(
    'flows/migrations/index.ts',
    replace(
      'export const migrations: FlowMigrations = {};',
      `export const migrations: FlowMigrations = { pay: { '${flowShape(payMachine)}': { awaitingAmount: 'enteringAmount' } } };`,
    ),
  );
  return dir;
}

let service: Service;
let redis: Redis;
/** A Redis server of this test's own: both builds' keys and queues, seen by no other test. */
let REDIS_URL: string;
let laterRoot: string;
let balancer: Balancer;
const processes: ProductProcess[] = [];
/** Duplicate-Check-Keys of the payment creations that reached the service, in order. */
const creations: string[] = [];
/** The waiting person's Duplicate-Check-Key, once their creation reached the service. */
let heldKey: string | undefined;
const heldCreations = () => creations.filter((key) => key === heldKey).length;

const paymentsOf = (phone: string) =>
  service.sandbox.controls
    .payments()
    .filter((p) => (p as { metadata: Record<string, string> }).metadata.chat === `ussd:${phone}`);

beforeAll(async () => {
  REDIS_URL = `redis://127.0.0.1:${(await startOwnRedis()).port}`;
  redis = new Redis(REDIS_URL);
  laterRoot = makeLaterBuild();
  // The waiting person's creation is held at the service until the later build makes it again under the same
  // key (after the earlier process sending it was killed); that repeat waits until the first reached the service.
  service = await startService(API_KEY, async (req, body) => {
    const key = String(req.headers['duplicate-check-key']);
    creations.push(key);
    if (!body.toString().includes(`ussd:${WAITING}`)) return;
    heldKey = key;
    if (creations.filter((k) => k === key).length === 1) {
      await until('the creation made again', () => creations.filter((k) => k === key).length > 1, {
        timeoutMs: 100_000,
        everyMs: 50,
      });
    } else {
      await until('the held creation at the service', () => paymentsOf(WAITING).length > 0, { timeoutMs: 20_000 });
    }
  });
  // The service's notifications go to whichever process is up, of either build, as a load balancer sends them.
  balancer = await new Balancer(() =>
    processes
      .filter((p) => p.child.exitCode === null && p.child.signalCode === null)
      .map((p) => Number(new URL(p.url).port)),
  ).start();
}, 60_000);

afterAll(async () => {
  for (const product of processes) if (product.child.exitCode === null) product.child.kill('SIGKILL');
  await Promise.all(processes.map((p) => p.exit));
  await service?.close();
  await balancer?.close();
  await redis?.quit();
  await stopAll();
  await dropProductDatabase();
  if (laterRoot) rmSync(laterRoot, { recursive: true, force: true });
});

async function start(name: string, root: string): Promise<Build> {
  const process = await startProductProcess(
    {
      LOG_LEVEL: 'warn',
      MOMO_BASE_URL: service.url,
      MOMO_API_KEY: API_KEY,
      REDIS_URL,
      ACCESS_POLICY: POLICY,
      USSD_CALLBACK_TOKEN: CALLBACK_TOKEN,
      PUBLIC_URL: `http://127.0.0.1:${balancer.port}`,
      // The waiting person is answered "processing" while their creation is held.
      USSD_DEADLINE_MS: '2000',
    },
    root,
  );
  processes.push(process);
  return { name, process };
}

async function kill(build: Build): Promise<void> {
  build.process.child.kill('SIGKILL');
  expect(await build.process.exit).toBeNull();
}

describe('a rolling deploy of changed flows', () => {
  it('moves conversations at every step between two builds: each continues or starts again, each paid once', async () => {
    const [old1, old2, new1] = await Promise.all([
      start('earlier-1', ROOT),
      start('earlier-2', ROOT),
      start('later-1', laterRoot),
    ]);
    const people = STEPS.map((step, i) => new Person(step, PHONES[i]!, String(1100 + i * 100)));
    const person = (step: Step) => people.find((p) => p.step === step)!;

    // On the earlier build, each person walks to their step; one pays there.
    const paid = person('paid');
    await Promise.all([
      ...people
        .filter((p) => p.step !== 'waiting' && p !== paid)
        .map((p) => p.walk(old1, (screen) => AT[p.step as Exclude<Step, 'waiting' | 'paid'>].test(screen))),
      paid.walk(old1, (screen) => SENT.test(screen)),
    ]);
    const waiting = person('waiting');
    await waiting.walk(old1, (screen) => AT.pin.test(screen));
    expect(await waiting.hop(old1, '1234')).toMatch(PROCESSING);
    expect(heldCreations()).toBe(1);

    // Each one's next hop, in the same gateway session, goes to the later build.
    const moved = await Promise.all(
      people.map(async (p) => {
        const answer = p.respond();
        return { step: p.step, screen: await p.hop(new1, answer) };
      }),
    );
    const after = Object.fromEntries(moved.map(({ step, screen }) => [step, screen])) as Record<Step, string>;
    // The removed step: told in one line, and the start.
    expect(after.note).toMatch(UPDATED);
    expect(after.note.split('\n').slice(1).join('\n')).toMatch(/What would you like to do\?\n1\. Pay someone/);
    // Every other step continues where it was, the renamed one by its migration.
    expect(after.menu).toMatch(AT.kind);
    expect(after.kind).toMatch(AT.phone);
    expect(after.phone).toMatch(AT.firstName);
    expect(after.firstName).toMatch(AT.lastName);
    expect(after.lastName).toMatch(AT.amount);
    expect(after.amount).toMatch(/^CON (Send [\d,]+ UGX|The network knows)/);
    // The summary's confirmation goes on to the step the later build added.
    expect(after.confirm).toMatch(AT.note);
    expect(after.pin).toMatch(new RegExp(`${SENT.source}|${PROCESSING.source}`));
    // The payment in flight on the earlier build: being worked on, not started again.
    expect(after.waiting).toMatch(/still working on it|being confirmed/);
    // The one who paid on the earlier build dials the later one: the start, their payment not made again.
    expect(after.paid).toMatch(AT.menu);
    for (const p of people.filter((p) => !['note', 'pin', 'waiting'].includes(p.step)))
      expect(p.last, p.step).not.toMatch(UPDATED);

    // Back to the earlier build: a record the later build wrote is left alone, the person asked to try again.
    for (const p of [person('kind'), person('amount')]) {
      const conversation = `momo:${keys.conversation({ channel: 'ussd', conversationId: p.phone })}`;
      const stored = await redis.get(conversation);
      expect(await p.hop(old2, p.respond())).toMatch(TRY_AGAIN);
      expect(await redis.get(conversation)).toBe(stored);
    }

    // The rolling restart: the earlier processes killed, the held payment's sender first; a second later one.
    await kill(old1);
    const new2 = await start('later-2', laterRoot);
    await kill(old2);
    const later = [new1, new2];

    // Everyone finishes on the later build, their hops spread over its two processes.
    await Promise.all(
      people
        .filter((p) => p !== waiting && p !== paid)
        .map(async (p, i) => {
          await p.walk(later[i % 2]!, (screen) => SENT.test(screen) || PROCESSING.test(screen), 25);
          if (!SENT.test(p.last))
            await until(`${p.step} told the outcome`, async () => SENT.test(await p.dial(later[i % 2]!)), {
              timeoutMs: 30_000,
              everyMs: 500,
            });
        }),
    );
    // The held payment: made again by the later build under its key once its run's lease expired, and told.
    const told = await until(
      'the held payment told',
      async () => {
        const screen = await waiting.dial(later[0]!);
        return SENT.test(screen) && screen;
      },
      { timeoutMs: 60_000, everyMs: 1000 },
    );
    expect(told).toMatch(SENT);
    expect(heldCreations()).toBeGreaterThanOrEqual(2);

    // Each person paid exactly once, at the service.
    for (const p of people) expect(paymentsOf(p.phone), p.step).toHaveLength(1);
    // Each payment's notification, queued by a process of either build and worked by one, is shown to its
    // person: at the next dials until an answer in the session proves the screen arrived, then no more.
    await Promise.all(
      people.map(async (p, i) => {
        const done = new RegExp(
          `Done: ${Number(p.amount).toLocaleString('en-US')} UGX reached \\+256772000001\\. Ref MC-`,
        );
        const shown = () => p.screens.filter(({ screen }) => done.test(screen)).length;
        await until(
          `${p.step}'s payment arrived, shown`,
          async () => shown() > 0 || (await p.dial(later[i % 2]!), shown() > 0),
          { timeoutMs: 30_000, everyMs: 500 },
        );
        // An answer in the session that showed it proves it arrived; shown at two dials at most either way.
        if (done.test(p.last))
          expect(await p.hop(later[(i + 1) % 2]!, choice(p.last, /^Pay someone$/))).toMatch(
            /What do you want to send\?|Pay whom\?/,
          );
        await until(`${p.step}'s note no longer shown`, async () => !done.test(await p.dial(later[i % 2]!)));
        expect(shown(), p.step).toBeLessThanOrEqual(2);
      }),
    );
    for (const p of people) for (const { screen } of p.screens) expect(screen).not.toMatch(ERROR);
  }, 150_000);
});
