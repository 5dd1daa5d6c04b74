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
 * next hop, in the same gateway session, goes to the later build, some go back to the earlier one, then a
 * second process of the later build starts and the earlier processes are killed (SIGKILL, the held payment's
 * among them). The held creation is let through once the later build repeats it under the same key.
 *
 * Before that, a person sits at every step of every flow (read from the machines; the steps only a particular
 * answer of the service's reaches are given it: STEERED), money calls held at the service, and each moves to the
 * later build while the earlier process leading those calls is killed (SIGKILL) and started again.
 *
 * One Redis server of the test's own holds both builds' records and queues; the service's notifications reach
 * whichever process is up through a balancer, so jobs are queued and worked by either build while both run: the
 * notifications, the texts of their outcomes (SMS_PROVIDER, each process at a path of its own) and the outcomes
 * owed (rows in PostgreSQL, made due by the test). A job or row the later build wrote is never worked by the
 * earlier; one the earlier wrote is worked by the later. Every person ends paid exactly once (the service's
 * payments, by chat), told so, texted once and shown the payment's arrival; every screen either continues the
 * conversation, says in one line that the service was updated and shows the start, or (the earlier build
 * reading the later one's record) asks to try again in a moment; never an error.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import http, { type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue, type JobType } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { payMachine } from '../../flows/pay.machine.js';
import { requestMachine } from '../../flows/request.machine.js';
import { flowShape } from '../../flows/shape.js';
import { VENDING_FLOWS } from '../../flows/purchase.js';
import type { FlowId } from '../../flows/types.js';
import type { ConversationRecord } from '../../src/conversation/engine/ledger.js';
import { hashPin } from '../../src/conversation/calls/access-policy.js';
import { notificationQueueName } from '../../src/notifications/index.js';
import { keys, queuePrefixesOf, type PartedQueue } from '../../src/store/keys.js';
import { startOwnRedis, stopAll } from '../redis/servers.js';
import { until } from '../until.js';
import { Balancer, readAll } from '../chaos/proxies.js';
import { answerTowards, everyStep, forwardAnswer, storedState, type Steer, type Target } from './every-step.js';
import {
  dropSharedDatabase,
  sharedDatabase,
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

/** Every step of every flow, read from the machines: one person sits at each when the later build starts. */
const TARGETS: Target[] = everyStep();
/** A number of the target's country: the vending group's (Nigeria) for its flows, else Uganda. */
const targetPhone = (i: number) =>
  VENDING_FLOWS.includes(TARGETS[i]!.flow)
    ? `+23480188${String(i).padStart(5, '0')}`
    : `+25670188${String(i).padStart(4, '0')}`;

const payer = { flows: ['pay'], perPaymentLimit: { UGX: '100000' }, dailyLimit: { UGX: '100000' } };
const everything = {
  flows: ['pay', 'request', 'check', 'data', 'pin'],
  perPaymentLimit: { UGX: '100000', NGN: '100000' },
  dailyLimit: { UGX: '1000000', NGN: '1000000' },
};
/**
 * The steps only a particular answer reaches, and what gives it: the role (a caller offered two currencies, one
 * who sees every collection), what is typed (a number the network does not know, one it knows by another name:
 * the sandbox's test numbers), what the service holds first (a collection received; an earlier payment or purchase
 * of the same caller, made by walking to its money step first).
 */
const STEERED: Record<string, { role?: string; steer?: Steer; first?: `${FlowId}.${string}` }> = {
  'pay.choosingCurrency': { role: 'twoCurrencies' },
  'request.choosingCurrency': { role: 'twoCurrencies' },
  'pay.notRegistered': { steer: { typed: { phone: ['0772000002'] } } },
  'pay.confirmingName': { steer: { typed: { phone: ['0752000003'] } } },
  'check.choosingCollection': { role: 'seesAll' },
  'pay.confirmingRepeat': { first: 'pay.submitting' },
  'pin.choosingCandidate': { first: 'pin.purchasing' },
};
const steeredOf = (target: Target) => STEERED[`${target.flow}.${target.state}`] ?? {};
const POLICY = JSON.stringify({
  roles: {
    payer,
    everything,
    // Ugandan callers are offered UGX and KES (COUNTRY_CURRENCIES below); only this role may pay in both.
    twoCurrencies: {
      ...everything,
      perPaymentLimit: { ...everything.perPaymentLimit, KES: '100000' },
      dailyLimit: { ...everything.dailyLimit, KES: '1000000' },
    },
    seesAll: { ...everything, seeAllCollections: true },
  },
  users: {
    telegram: {},
    slack: {},
    ussd: Object.fromEntries([
      ...PHONES.map((phone) => [phone, { role: 'payer', pin: hashPin('1234') }]),
      ...TARGETS.map((target, i) => [
        targetPhone(i),
        { role: steeredOf(target).role ?? 'everything', pin: hashPin('1234') },
      ]),
    ]),
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
const SENT = /Sent: [\d,]+ UGX to .+\. Ref MC-[A-Z0-9]+\.|was sent; you will be notified of the result/;
const PROCESSING = /still working on it/;
/**
 * A money call out, being worked on: the engine's words, or, on a loaded machine, the USSD hop's own guard at
 * its deadline (adapters/ussd/hop.ts), which says as much. Neither starts the call again.
 */
const WORKING = /still working on it|being confirmed|taking longer than expected/;
const UPDATED = /^CON The service was updated, so we started again\.\n/;
const TRY_AGAIN = /^END The service is being updated\. Please try again in a moment/;
/** What no screen may say: an error, a stranded conversation. */
const ERROR = /went wrong|cannot reach|does not exist|not allowed/i;

/** The gateway session a person's hops go in: its id, what they answered so far, every screen they got. */
interface HopSession {
  sessionId: string;
  phone: string;
  answers: string[];
  screens: Array<{ build: string; screen: string }>;
}

/** One Africa's Talking request to `product`: the screen, kept in `hops.screens`, answered 200 and no error. */
async function gatewayHop(product: Build, hops: HopSession, label: string): Promise<string> {
  const res = await fetch(`${product.process.url}${GATEWAY}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      sessionId: hops.sessionId,
      serviceCode: '*384*123#',
      phoneNumber: hops.phone,
      networkCode: '63902',
      text: hops.answers.join('*'),
    }),
  });
  const screen = await res.text();
  hops.screens.push({ build: product.name, screen });
  expect(res.status, `${label}: ${screen}`).toBe(200);
  expect(screen, `${label} on ${product.name}`).not.toMatch(ERROR);
  return screen;
}

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
    return gatewayHop(product, this, this.step);
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

/** The later build's renames in flows other than pay: the request flow's with a migration, the data flow's without. */
const LATER_RENAMES = {
  migrated: ['request', 'awaitingReason', 'enteringReason'],
  gone: ['data', 'choosingBundle', 'pickingBundle'],
} as const;
/** What the later build calls each earlier state (its renames, with or without a migration). */
const LATER_NAME: Partial<Record<FlowId, Record<string, string>>> = {
  pay: { awaitingAmount: 'enteringAmount', submitting: 'sending' },
  request: { awaitingReason: 'enteringReason' },
  data: { choosingBundle: 'pickingBundle' },
};
/** The earlier steps the later build has no path for (no state of that id, no migration): started again. */
const LATER_GONE: Partial<Record<FlowId, string[]>> = { pay: ['awaitingDescription'], data: ['choosingBundle'] };
/** The flows whose shape the later build changed: a record of them it wrote, the earlier build leaves alone. */
const CHANGED: FlowId[] = ['pay', 'request', 'data'];

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
  // Another flow's state renamed, with a migration; a third flow's state gone (renamed, no migration).
  for (const [flow, from, to] of Object.values(LATER_RENAMES))
    edit(`flows/${flow}.machine.ts`, replace(new RegExp(`\\b${from}\\b`, 'g'), to));
  edit(
    'flows/migrations/index.ts',
    replace(
      'export const migrations: FlowMigrations = {};',
      `export const migrations: FlowMigrations = {
        pay: { '${flowShape(payMachine)}': { awaitingAmount: 'enteringAmount' } },
        request: { '${flowShape(requestMachine)}': { awaitingReason: 'enteringReason' } },
      };`,
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
let old1: Build;
let old2: Build;
let new1: Build;
/** The every-step walk's people: their phone and their step. */
const movers = TARGETS.map((target, i) => ({ target, phone: targetPhone(i) }));
/** The every-step walk's money calls are held at the service (their Duplicate-Check-Keys kept). */
let holding = false;
const heldKeys = new Set<string>();
/** Lets the every-step walk's held money calls through. */
const released = (() => {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
})();
const heldCreations = () => creations.filter((key) => key === heldKey).length;

const paymentsOf = (phone: string) =>
  service.sandbox.controls
    .payments()
    .filter((p) => (p as { metadata: Record<string, string> }).metadata.chat === `ussd:${phone}`);

/** The earlier build's place in the order of releases: the time `npm run build` stamped in dist/ (flow/build.ts). */
const EARLIER_BUILD = Date.parse(readFileSync(join(ROOT, 'dist', '.built'), 'utf8').trim());
/** Whether a process name (`later-1`) or a build (a job's stamp, an owed row's) is of the later build. */
const isLater = (by: string | number) => (typeof by === 'number' ? by > EARLIER_BUILD : by.startsWith('later-'));

/** One text the SMS provider (Africa's Talking, played below) was asked to send: by which process, to whom. */
interface Text {
  by: string;
  to: string;
  message: string;
  /** Answered accepted; the earlier build's sends hang at the provider and are never accepted. */
  accepted: boolean;
}
const texts: Text[] = [];
/** The sends held open (the earlier build's), ended with the test. */
const hanging: ServerResponse[] = [];
let smsServer: http.Server;
let smsUrl: string;

/**
 * Africa's Talking's SMS API as the products reach it, each process at a path of its name (its AT_SMS_URL). A
 * send from a process of the later build is accepted; one from the earlier build hangs (a connection the
 * provider never answers, until that process gives up or is killed), so every text the earlier build's workers
 * take is sent, if at all, by a later process: the SMS queue's jobs of either build end up worked by the later.
 */
async function startSmsProvider(): Promise<void> {
  smsServer = http.createServer((req, res) => {
    void readAll(req).then((body) => {
      const form = new URLSearchParams(body.toString());
      const by = (req.url ?? '').split('/')[1] ?? '';
      const accepted = isLater(by);
      texts.push({ by, to: form.get('to') ?? '', message: form.get('message') ?? '', accepted });
      if (!accepted) return void hanging.push(res);
      const recipient = {
        number: form.get('to'),
        status: 'Success',
        statusCode: 101,
        messageId: `ATX-${texts.length}`,
      };
      res
        .writeHead(201, { 'content-type': 'application/json' })
        .end(JSON.stringify({ SMSMessageData: { Message: 'Sent to 1/1', Recipients: [recipient] } }));
    });
  });
  await new Promise<void>((resolve) => smsServer.listen(0, '127.0.0.1', resolve));
  smsUrl = `http://127.0.0.1:${(smsServer.address() as AddressInfo).port}`;
}

/** A BullMQ job as the products left it: the build its name says wrote it, and its data. */
interface QueuedJob {
  build: number;
  data: unknown;
}

/** The jobs of one of the products' queues (all its parts) in `states` (default: whatever became of them). */
async function jobsOf(
  queue: Extract<PartedQueue, 'notifications' | 'sms'>,
  states: JobType[] = ['completed', 'failed', 'delayed', 'waiting', 'active', 'prioritized'],
): Promise<QueuedJob[]> {
  const name = `${notificationQueueName(API_KEY)}${queue === 'sms' ? '-sms' : ''}`;
  const jobs: QueuedJob[] = [];
  for (const prefix of queuePrefixesOf('momo:').parts(queue)) {
    const q = new Queue(name, { connection: redis, prefix });
    for (const job of await q.getJobs(states)) {
      const m = /^notification (\d+) \S+$/.exec(job.name);
      expect(m, `${queue} job ${job.id} carries its build`).not.toBeNull();
      jobs.push({ build: Number(m![1]), data: job.data });
    }
    await q.close();
  }
  return jobs;
}

/**
 * The owed outcomes' claims as the database saw them: each claim of a row (its tries counted up, owed.ts claim)
 * with the row's build and the claiming process (its connections' application_name, PGAPPNAME).
 */
let journal: pg.Client;
async function watchOwedClaims(): Promise<void> {
  journal = new pg.Client({ connectionString: (await sharedDatabase()).url });
  await journal.connect();
  await journal.query('create table test_owed_claims (ref text, build bigint, claimed_by text)');
  await journal.query(`create function test_owed_claimed() returns trigger language plpgsql as $$
    begin
      if new.tries > old.tries then
        insert into test_owed_claims values (new.ref, new.build, current_setting('application_name'));
      end if;
      return new;
    end $$`);
  await journal.query(
    'create trigger test_owed_claimed after update on owed_outcomes for each row execute function test_owed_claimed()',
  );
}

/**
 * Makes the open owed rows of `refs` written by builds `of` picks due now (their first check is minutes after
 * the intent), and waits until a poller claimed each; resolves to the claims of those rows.
 */
async function owedDueNow(refs: string[], of: (build: number) => boolean) {
  const { rows } = await journal.query<{ ref: string; build: string }>(
    'select ref, build from owed_outcomes where settled_at is null and ref = any($1)',
    [refs],
  );
  const due = rows.filter((row) => of(Number(row.build))).map((row) => row.ref);
  await journal.query('update owed_outcomes set next_check = now() where ref = any($1) and settled_at is null', [due]);
  return until(
    `${due.length} owed rows claimed`,
    async () => {
      const claims = await journal.query<{ ref: string; build: string; claimed_by: string }>(
        'select ref, build, claimed_by from test_owed_claims where ref = any($1)',
        [due],
      );
      return new Set(claims.rows.map((c) => c.ref)).size === due.length && claims.rows;
    },
    { timeoutMs: 30_000, everyMs: 250 },
  );
}

/** Our refs (the service's metadata.ref) of the payments the service holds that reached a final state. */
const finalRefs = () =>
  service.sandbox.controls
    .payments()
    .filter((p) => ['processed', 'completed', 'failed', 'rejected', 'cancelled'].includes(String(p.state)))
    .map((p) => String((p as { metadata: Record<string, string> }).metadata.ref));

beforeAll(async () => {
  REDIS_URL = `redis://127.0.0.1:${(await startOwnRedis()).port}`;
  redis = new Redis(REDIS_URL);
  laterRoot = makeLaterBuild();
  await startSmsProvider();
  // The waiting person's creation is held at the service until the later build makes it again under the same
  // key (after the earlier process sending it was killed); that repeat waits until the first reached the service.
  service = await startService(
    API_KEY,
    async (req, body) => {
      const key = String(req.headers['duplicate-check-key']);
      creations.push(key);
      // While the every-step walk's people walk to their money steps (and no one else pays), every creation
      // waits until they were moved.
      if (holding) {
        heldKeys.add(key);
        await released.promise;
        return;
      }
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
    },
    // Payments, requests and purchases (the vending service behind the same address).
    {
      held: (req) => /^\/(api\/payments|api\/collectionrequests|vending\/services\/\w+\/purchase)/.test(req.url ?? ''),
    },
  );
  // The service's notifications go to whichever process is up, of either build, as a load balancer sends them.
  balancer = await new Balancer(() =>
    processes
      .filter((p) => p.child.exitCode === null && p.child.signalCode === null)
      .map((p) => Number(new URL(p.url).port)),
  ).start();
  // One pair of builds for both tests: two processes of the earlier, one of the later.
  [old1, old2, new1] = await Promise.all([
    start('earlier-1', ROOT),
    start('earlier-2', ROOT),
    start('later-1', laterRoot),
  ]);
  await watchOwedClaims();
}, 60_000);

afterAll(async () => {
  for (const product of processes) if (product.child.exitCode === null) product.child.kill('SIGKILL');
  await Promise.all(processes.map((p) => p.exit));
  await service?.close();
  await balancer?.close();
  for (const res of hanging) res.destroy();
  smsServer?.closeAllConnections();
  await new Promise((resolve) => (smsServer ? smsServer.close(resolve) : resolve(undefined)));
  await journal?.end();
  await redis?.quit();
  await stopAll();
  await dropSharedDatabase();
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
      // Ugandan callers offered two currencies: those of a role allowed both are asked which.
      COUNTRY_CURRENCIES: 'UG:UGX,UG:KES,KE:KES',
      // Outcomes texted too: through a queue of their own, sent at a path naming the process.
      SMS_PROVIDER: 'africastalking',
      AT_USERNAME: 'sandbox',
      AT_API_KEY: 'two-builds-at-key',
      AT_SMS_URL: `${smsUrl}/${name}`,
      // The database sees which process claims an owed outcome (watchOwedClaims).
      PGAPPNAME: name,
      // A killed process's runs are taken over (and the held payment made again) 5 s after their last renewal,
      // at the next sweep, not 10 s and up to 2 s on: long enough that a live process, renewing every 1.7 s on
      // a loaded machine, is never taken for dead (that would repeat the held creation before its kill).
      RUN_LEASE_MS: '5000',
      RUN_SWEEP_MS: '250',
      // An owed outcome made due (owedDueNow) is claimed at the next tick: a quarter of a second, not five.
      OWED_POLL_MS: '250',
      // A text an earlier process held when it was killed (its send hangs at the provider) is worked again by a
      // later one once its job's lock and its sending lease ran out: within about 8 s, not 30.
      NOTIFY_JOB_LOCK_MS: '5000',
      NOTIFY_LEASE_MS: '5000',
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

/** The conversation record of `phone` as stored (`<version>:<write id>:<JSON>`), or undefined. */
async function recordOf(phone: string): Promise<ConversationRecord | undefined> {
  const raw = await redis.get(`momo:${keys.conversation({ channel: 'ussd', conversationId: phone })}`);
  const m = raw === null ? null : /^\d+:[^:]*:([\s\S]*)$/.exec(raw);
  return m ? (JSON.parse(m[1]!) as ConversationRecord) : undefined;
}

/** One person of the every-step walk: hops as Africa's Talking posts them, answers read from the stored flow. */
class Mover {
  sessionId = '';
  answers: string[] = [];
  readonly screens: Array<{ build: string; screen: string }> = [];
  constructor(
    readonly target: Target,
    readonly phone: string,
  ) {}

  get name(): string {
    return `${this.target.flow}.${this.target.state}`;
  }

  get last(): string {
    return this.screens.at(-1)?.screen ?? '';
  }

  async hop(product: Build, answer?: string): Promise<string> {
    if (!this.sessionId || this.last.startsWith('END') || answer === undefined) {
      this.sessionId = `every-step-${Math.random().toString(36).slice(2)}`;
      this.answers = [];
    } else this.answers.push(answer);
    return gatewayHop(product, this, this.name);
  }

  /** The stored flow, once no run of it is out (a service call answered). */
  async settled() {
    return until(`${this.name}: no run out`, async () => {
      const record = await recordOf(this.phone);
      return record?.run === undefined && record;
    });
  }

  /**
   * On `product`, walks to the money step `step` (`pay.submitting`) and through it: its call made (the journal
   * holds an operation of this caller's), its run over.
   */
  async pass(product: Build, step: `${FlowId}.${string}`): Promise<void> {
    const [flow, state] = step.split('.') as [FlowId, string];
    const made = async () =>
      (await journal.query('select 1 from operations where channel_user = $1', [this.phone])).rows.length > 0;
    for (let hops = 0; hops < 40 && !(await made()); hops++) {
      if (!this.sessionId || this.last.startsWith('END')) await this.hop(product);
      else if (/Continue where you left off/.test(this.last)) await this.hop(product, choice(this.last, /^Continue$/));
      else {
        const storedFlow = (await this.settled()).session;
        const answer =
          storedFlow && !storedFlow.ended && [flow, 'menu'].includes(storedFlow.flow)
            ? answerTowards(storedFlow, { flow, state, money: true })
            : undefined;
        await this.hop(product, answer?.text ?? '00');
      }
    }
    expect(await made(), `${this.name}: ${step} made first`).toBe(true);
    await this.settled();
  }

  /**
   * On `product` (this repository's build), hops until the stored conversation is at the target step; false
   * when no answer leads there (a step only a service's particular answer reaches).
   */
  async reach(product: Build): Promise<boolean> {
    const { steer } = steeredOf(this.target);
    /** Answers the flow refused at a step (`state:answer`), and how often each step was seen: no loops. */
    const refused = new Set<string>();
    const visits = new Map<string, number>();
    let asked: { at: string; text: string } | undefined;
    for (let hops = 0; hops < 40; hops++) {
      const at = (await recordOf(this.phone))?.session;
      // A money step is reached while its call is out (held at the service).
      if (at && !at.ended && at.flow === this.target.flow && storedState(at) === this.target.state) return true;
      if (!this.sessionId || this.last.startsWith('END')) {
        await this.hop(product);
        continue;
      }
      if (/Continue where you left off/.test(this.last)) {
        await this.hop(product, choice(this.last, /^Continue$/));
        continue;
      }
      const storedFlow = (await this.settled()).session;
      if (
        storedFlow &&
        !storedFlow.ended &&
        storedFlow.flow === this.target.flow &&
        storedState(storedFlow) === this.target.state
      )
        return true;
      if (!storedFlow || storedFlow.ended || (storedFlow.flow !== this.target.flow && storedFlow.flow !== 'menu')) {
        await this.hop(product, '00');
        continue;
      }
      const here = `${storedFlow.flow}.${storedState(storedFlow)}`;
      if (asked?.at === here) refused.add(`${here}:${asked.text}`);
      const seen = (visits.get(here) ?? 0) + 1;
      visits.set(here, seen);
      if (seen > 3) return false;
      const answer = answerTowards(storedFlow, this.target, (text) => refused.has(`${here}:${text}`), steer);
      if (!answer) return false;
      asked = { at: here, text: answer.text };
      await this.hop(product, answer.text);
    }
    return false;
  }
}

/**
 * The queued jobs of both builds, after the rolling restart: each text (the SMS queue) a later build queued was
 * never taken by an earlier process, and each the earlier queued was sent by a later one (the earlier's sends
 * hang); each notification (the service's, queued by whichever process it reached) the later build queued was
 * told by the later build (the text its telling queued carries the teller's build), one the earlier queued by
 * either.
 */
async function jobsWorkedByTheirBuilds(): Promise<void> {
  const sms = await jobsOf('sms');
  expect(sms.length).toBeGreaterThan(0);
  for (const job of sms) {
    const { to, text } = job.data as { to: string; text: string };
    const sends = texts.filter((t) => t.to === to && t.message === text);
    if (isLater(job.build))
      expect(
        sends.filter((t) => !isLater(t.by)),
        text,
      ).toEqual([]);
    expect(
      sends.filter((t) => t.accepted),
      text,
    ).toHaveLength(1);
    expect(isLater(sends.find((t) => t.accepted)!.by), text).toBe(true);
  }
  // The teller of each (payment, state) texted: the build of the text's job (its key `payment:<ref>:<state>`).
  const tellerOf = new Map(sms.map((job) => [(job.data as { key: string }).key, job.build]));
  const notices = (await jobsOf('notifications')).flatMap((job) =>
    (job.data as Array<{ kind: string; ref: string; state: string }>).map((notice) => ({
      job,
      key: `${notice.kind}:${notice.ref}:${notice.state === 'completed' ? 'processed' : notice.state}`,
    })),
  );
  const told = notices.filter(({ key }) => tellerOf.has(key));
  expect(told.length).toBeGreaterThan(0);
  for (const { key } of told) {
    // A notice the service delivered twice, to processes of both builds, may be told by either.
    if (notices.filter((n) => n.key === key).every((n) => isLater(n.job.build)))
      expect(isLater(tellerOf.get(key)!), key).toBe(true);
  }
  expect(told.some(({ job }) => isLater(job.build))).toBe(true);
  // Some job the earlier build wrote was worked by the later: a notification it queued told by the later build,
  // or a text it queued (which only a later process sends).
  expect(
    sms.some((job) => !isLater(job.build)) ||
      told.some(({ job, key }) => !isLater(job.build) && isLater(tellerOf.get(key)!)),
  ).toBe(true);
}

describe('a rolling deploy of changed flows', () => {
  it('moves a conversation at every step of every flow to the later build: each continues or starts again', async () => {
    const people = movers.map((m) => new Mover(m.target, m.phone));
    // On the earlier build, each person walks to their step; those at a money call last, their calls held at
    // the service from then until they were moved (within the service client's timeout).
    // A collection received, which a caller who sees every collection is shown.
    await service.sandbox.controls.sendCollection({ phonenumber: '+256772000001', amount: '2500', currency: 'UGX' });
    const reached = await Promise.all(
      people.map(async (p) => {
        if (p.target.money) return true;
        const { first } = steeredOf(p.target);
        if (first) await p.pass(old1, first);
        return p.reach(old1);
      }),
    );
    holding = true;
    await Promise.all(people.map(async (p, i) => p.target.money && (reached[i] = await p.reach(old1))));
    expect(people.filter((_, i) => !reached[i]).map((p) => p.name)).toEqual([]);
    const moving = people.filter((_, i) => reached[i]);
    expect(new Set(moving.map((p) => p.target.flow))).toEqual(new Set(TARGETS.map((t) => t.flow)));

    // Each one's next answer, in the same gateway session, goes to the later build (calls made from now on are
    // not held). Meanwhile the rolling restart kills the process leading the held money calls (SIGKILL), and its
    // supervisor starts the earlier build again: those calls' runs are taken over once their leases ran out.
    holding = false;
    const restarted = kill(old1).then(() => start('earlier-3', ROOT));
    const moved = await Promise.all(
      moving.map(async (p) => {
        const before = (await recordOf(p.phone))!.session!;
        const answer = p.target.money ? undefined : forwardAnswer(before);
        const screen = await p.hop(new1, answer?.text ?? '1');
        // A money call is still held: its record is read as it is.
        const after = p.target.money ? (await recordOf(p.phone))?.session : (await p.settled()).session;
        return { p, answer, screen, after };
      }),
    );
    old1 = await restarted;
    const seen: string[] = [];
    for (const { p, answer, screen, after } of moved) {
      const { flow, state } = p.target;
      seen.push(`${p.name}: ${screen.split('\n')[0]}`);
      expect.soft(screen, p.name).not.toMatch(TRY_AGAIN);
      if (LATER_GONE[flow]?.includes(state)) {
        // No path in the later build: one line, and the conversation's start.
        expect.soft(screen, p.name).toMatch(UPDATED);
        expect.soft(screen.split('\n').slice(1).join('\n'), p.name).toMatch(AT.menu);
      } else if (p.target.money) {
        // The money call out on the earlier build: being worked on, never started again.
        expect.soft(screen, p.name).toMatch(WORKING);
      } else {
        expect.soft(screen, p.name).not.toMatch(UPDATED);
        // Continued: the step the answer leads to, under the later build's name for it.
        const machineState = answer && TARGETS.some((t) => t.flow === flow && t.state === answer.to && !t.money);
        if (machineState && after && !after.ended && after.flow === flow)
          expect.soft(storedState(after), p.name).toBe(LATER_NAME[flow]?.[answer.to] ?? answer.to);
      }
    }

    // Back on the earlier build (the process that stayed, or the one restarted): a record the later build wrote
    // of a flow it changed is left alone; of one it did not change, continued.
    await Promise.all(
      moved
        .filter(({ p, after }) => !p.target.money && after && !after.ended && !p.last.startsWith('END'))
        .map(async ({ p, after }, i) => {
          const earlier = i % 2 === 0 ? old1 : old2;
          const before = await redis.get(`momo:${keys.conversation({ channel: 'ussd', conversationId: p.phone })}`);
          // Answered as the later build's flow asks (the earlier build's machine may not have its state).
          const answer = CHANGED.includes(after!.flow) ? undefined : forwardAnswer(after!);
          if (CHANGED.includes(after!.flow)) {
            expect(await p.hop(earlier, '1'), p.name).toMatch(TRY_AGAIN);
            expect(await redis.get(`momo:${keys.conversation({ channel: 'ussd', conversationId: p.phone })}`)).toBe(
              before,
            );
          } else if (answer)
            expect(await p.hop(earlier, answer.text), p.name).not.toMatch(
              new RegExp(`${UPDATED.source}|${TRY_AGAIN.source}`),
            );
        }),
    );

    // The money calls let through (those of the killed process reach the service after it died): each made once
    // (one key), its outcome told at the person's next dial.
    released.resolve();
    await Promise.all(
      moving
        .filter((p) => p.target.money)
        .map(async (p) => {
          const told = await until(
            `${p.name} told the outcome`,
            async () => {
              const screen = await p.hop(new1);
              return !PROCESSING.test(screen) && !/being confirmed/.test(screen) && screen;
            },
            // The killed process's runs: taken over once their leases ran out (RUN_LEASE_MS) by a sweep.
            { timeoutMs: 45_000, everyMs: 300 },
          );
          seen.push(`${p.name} told: ${told.split('\n')[0]}`);
        }),
    );
    // Each money call made under one key, whichever build made it (again): one intent of its person's, one key.
    expect(heldKeys.size).toBe(moving.filter((p) => p.target.money).length);
    for (const p of moving.filter((p) => p.target.money)) {
      const { rows } = await journal.query('select ref from operations where channel_user = $1', [p.phone]);
      expect(rows, p.name).toHaveLength(1);
    }
    for (const p of moving.filter((p) => p.target.flow === 'pay' && p.target.money))
      expect(paymentsOf(p.phone), p.name).toHaveLength(1);
  }, 120_000);

  it('moves conversations at every step between two builds: each continues or starts again, each paid once', async () => {
    // Nothing of the every-step walk held any more, whatever became of it.
    holding = false;
    released.resolve();
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
    const waitingFrom = waiting.screens.length;
    expect(await waiting.hop(old1, '1234')).toMatch(WORKING);
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
    expect(after.pin).toMatch(new RegExp(`${SENT.source}|${WORKING.source}`));
    // The payment in flight on the earlier build: being worked on, not started again.
    expect(after.waiting).toMatch(WORKING);
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

    // The rolling restart's second process of the later build starts now, beside the earlier ones (as a deploy
    // starts new processes before it stops old ones); the balancer sends it notifications once it listens.
    const startingLater2 = start('later-2', laterRoot);
    void startingLater2.catch(() => undefined); // its failure is the test's, at its await below

    // The outcomes owed of the payments the later build intended (the PIN's, those paid on it in the every-step
    // walk), due now while both builds run: claimed only by a poller of the later build, the earlier ones' leave
    // them (both lead ticks of their own).
    await until('a payment the later build intended is final', async () => {
      const { rows } = await journal.query<{ build: string }>('select build from owed_outcomes where ref = any($1)', [
        finalRefs(),
      ]);
      return rows.some((row) => isLater(Number(row.build)));
    });
    const laterClaims = await owedDueNow(finalRefs(), isLater);
    expect(laterClaims.length).toBeGreaterThan(0);
    for (const claim of laterClaims) expect(claim.claimed_by, claim.ref).toMatch(/^later-/);

    // The rolling restart: the earlier processes killed, the held payment's sender first; a second later one.
    await kill(old1);
    const new2 = await startingLater2;
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
    // The held payment: made again by the later build under its key once its run's lease expired. The service
    // answers that repeat 409 (it holds the key, as the first creation reached it), which does not prove the
    // payment was made (src/momo/assumptions.ts DUPLICATE_KEY_CONFLICT): the person is told it is being
    // confirmed, never "sent", and its outcome comes by the service's notification: "Done" at a dial.
    const heldDone = new RegExp(
      `Done: ${Number(waiting.amount).toLocaleString('en-US')} UGX reached \\+256772000001\\. Ref MC-`,
    );
    const told = await until(
      'the held payment told',
      async () => {
        const screen = await waiting.dial(later[0]!);
        if (!heldDone.test(screen)) {
          // What the person was shown since their PIN (each screen's first two lines: a dial's note is the second)
          // and what reached the service, for the failure's message.
          const shown = [
            ...new Set(waiting.screens.slice(waitingFrom).map((s) => s.screen.split('\n').slice(0, 2).join(' / '))),
          ];
          throw new Error(
            `${JSON.stringify(shown)} (creations of its key ${heldCreations()}, payments ${paymentsOf(WAITING).length})`,
          );
        }
        return screen;
      },
      { timeoutMs: 60_000, everyMs: 1000 },
    );
    expect(told).toMatch(heldDone);
    for (const { screen } of waiting.screens.slice(waitingFrom)) expect(screen).not.toMatch(SENT);
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

    // The outcomes owed of the payments the earlier build intended, due now that only the later build runs:
    // claimed by it.
    const earlierClaims = await owedDueNow(finalRefs(), (build) => !isLater(build));
    expect(earlierClaims.length).toBeGreaterThan(0);
    for (const claim of earlierClaims) expect(claim.claimed_by, claim.ref).toMatch(/^later-/);

    // Each person's outcome texted once, by a process of the later build, once no text is left queued.
    // A text an earlier process held when it was killed is sent once its lock and its lease ran out (start()).
    await until(
      'every outcome texted',
      () => people.every((p) => texts.some((t) => t.accepted && t.to === p.phone && /^Done: /.test(t.message))),
      { timeoutMs: 60_000, everyMs: 250 },
    );
    await until(
      'no text left queued',
      async () => (await jobsOf('sms', ['delayed', 'waiting', 'active', 'prioritized'])).length === 0,
      { timeoutMs: 60_000, everyMs: 500 },
    );
    for (const p of people)
      expect(
        texts.filter((t) => t.accepted && t.to === p.phone && /^Done: /.test(t.message)),
        p.step,
      ).toHaveLength(1);
    await jobsWorkedByTheirBuilds();
  }, 210_000);
});
