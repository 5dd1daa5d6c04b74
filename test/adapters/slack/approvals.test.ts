/**
 * Maker/checker in Slack, in the whole product (startApp: real engine, flows, access policy and the embedded
 * sandbox with its own approval rules; PostgreSQL, and a Redis of this file's own), driven by signed Slack
 * requests over HTTP against a local Web API: a maker's large payment held and posted to
 * SLACK_APPROVALS_CHANNEL, the maker's own approval and a non-approver's refused; Redis emptied while it waits
 * (the hold is the database's: still listed, the maker still refused), then two checkers' Approve paying once
 * under the key made when the maker confirmed, the maker told; Reject with a reason; and the service's own
 * approvers' states told to the maker.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningApp } from '../../../src/app.js';
import { serverDatabase, type ServerDatabase } from '../../journal/server-database.js';
import { startOwnRedis, type Server as RedisServer } from '../../redis/servers.js';
import {
  FakeSlack,
  SlackSender,
  TEAM,
  buttonLabelled,
  buttonOf,
  startProduct,
  textOf,
  triggerId,
  type Call,
  type Product,
} from './harness.js';

const MAKER = 'UMAKER1';
const CHECKER = 'UCHECK1';
const CHECKER2 = 'UCHECK2';
const TELLER = 'UTELLER1';
const APPROVALS = 'C0APPROVALS';
/** A sandbox test number registered as "Sarah Nakato"; payments to it succeed. */
const RECIPIENT = '0772000001';

const POLICY = {
  roles: {
    teller: {
      flows: ['pay', 'check'],
      perPaymentLimit: { UGX: '1000000' },
      dailyLimit: { UGX: '1500000' },
      approvalAbove: { UGX: '100000' },
    },
    finance: { flows: ['check'], perPaymentLimit: {}, dailyLimit: {}, approve: true },
  },
  users: {
    slack: {
      [MAKER]: { role: 'teller' },
      [TELLER]: { role: 'teller' },
      [CHECKER]: { role: 'finance' },
      [CHECKER2]: { role: 'finance' },
    },
  },
};

type Blocks = Array<Record<string, any>>;

let fake: FakeSlack;
let running: RunningApp;
let sender: SlackSender;
let product: Product | undefined;
let database: ServerDatabase | undefined;
let redisServer: RedisServer | undefined;
beforeAll(async () => {
  database = await serverDatabase('slack_approvals');
  // A Redis of this file's own: a test below empties it whole.
  redisServer = await startOwnRedis();
  product = await startProduct({
    SLACK_APPROVALS_CHANNEL: APPROVALS,
    ACCESS_POLICY: JSON.stringify(POLICY),
    CURRENCIES: 'UGX',
    REDIS_URL: `redis://127.0.0.1:${redisServer.port}`,
    DATABASE_URL: database.url,
  });
  ({ fake, running, sender } = product);
}, 120_000);
afterAll(async () => {
  await product?.close();
  redisServer?.kill();
  await database?.drop();
});

let responses = 0;
/** Walks the pay flow as `user` (buttons and the answer modal) to its last screen; answers its text. */
async function pay(user: string, amount: string, description: string): Promise<string> {
  const respond = async (): Promise<Blocks> => {
    for (;;) {
      const call = await fake.next('respond');
      if (call.id?.startsWith(`${user}-`)) return call.body.blocks;
    }
  };
  const id = () => `${user}-${(responses += 1)}`;
  const menu = (await (await sender.command('', { user })).json()) as { blocks: Blocks };
  await sender.click(buttonLabelled(menu.blocks, 'Pay someone'), id(), triggerId(), user);
  let blocks = await respond();
  // The description tells the tests' payments apart: added as a note from the summary, which then shows again.
  let noted = false;
  const answers: Array<[RegExp, string, 'press' | 'type']> = [
    [/What do you want to send/, 'Mobile money', 'press'],
    [/Pay whom/, 'Someone new', 'press'],
    [/phone number of the person/, RECIPIENT, 'type'],
    [/first name/, 'Sarah', 'type'],
    [/last name/, 'Nakato', 'type'],
    [/Enter the amount/, amount, 'type'],
    [/Enter a note/, description, 'type'],
    [/^Send /, 'Confirm', 'press'],
  ];
  for (let screen = 0; screen < 15; screen += 1) {
    const text = textOf(blocks);
    if (/^Send /.test(text) && !noted) {
      noted = true;
      await sender.click(buttonLabelled(blocks, 'Add a note'), id(), triggerId(), user);
      blocks = await respond();
      continue;
    }
    const step = answers.find(([pattern]) => pattern.test(text));
    if (!step) return text;
    const [, answer, how] = step;
    if (how === 'press') {
      await sender.click(buttonLabelled(blocks, answer), id(), triggerId(), user);
    } else {
      await sender.click(buttonOf(blocks, 'momo_answer'), id(), triggerId(), user);
      const opened = await fake.next('views.open');
      await sender.submit(opened.body.view, answer, user);
    }
    blocks = await respond();
  }
  throw new Error('the pay flow did not end');
}

/** The next approval message posted to the approvals channel. */
async function nextHeld(): Promise<Call> {
  for (;;) {
    const call = await fake.next('chat.postMessage');
    if (call.body.channel === APPROVALS) return call;
  }
}

/** The first direct message to `user` whose text matches `pattern` (posted so far or to come; none fails the test by its timeout). */
const dm = async (user: string, pattern: RegExp): Promise<string> =>
  textOf(
    (await fake.find('chat.postMessage', (c) => c.body.channel === user && pattern.test(textOf(c.body.blocks)))).body
      .blocks,
  );

/** The next update of the approval message. */
const nextUpdate = async (): Promise<Call> => fake.next('chat.update');
const nextEphemeral = async (): Promise<Call> => fake.next('chat.postEphemeral');

const paymentsFor = (description: string) =>
  running.sandbox!.controls.payments().filter((p) => p.description === description);

/** A second signed delivery of a click, from a user in the approvals channel. */
const press = (button: { action_id: string; value: string }, user: string) =>
  sender.click(button, `board-${user}`, triggerId(), user);

describe('maker/checker in Slack (real engine, sandbox, signed requests)', () => {
  let held: Call;
  /** The ts Slack gave the approval message: chat.update names it. */
  let heldTs: string;
  it("holds a maker's payment above approvalAbove, sends nothing, and posts it to the approvals channel with Approve / Reject", async () => {
    const last = await pay(MAKER, '200000', 'rent');
    expect(last).toMatch(/needs approval/);
    held = await nextHeld();
    heldTs = `1700000100.${String(fake.of('chat.postMessage').filter((c) => c.body.channel === APPROVALS).length).padStart(6, '0')}`;
    const text = textOf(held.body.blocks);
    expect(text).toContain(`<@${MAKER}>`);
    expect(text).toContain('200000');
    expect(text).toContain('UGX');
    expect(text).toContain('+256772000001');
    expect(buttonOf(held.body.blocks, 'momo_approval_approve').value).toMatch(/^[0-9a-f]+$/);
    buttonOf(held.body.blocks, 'momo_approval_reject');
    expect(paymentsFor('rent')).toEqual([]);
  });

  it("refuses the maker's own approval and a non-approver's, ephemerally, changing nothing", async () => {
    const approve = buttonOf(held.body.blocks, 'momo_approval_approve');
    expect((await press(approve, MAKER)).status).toBe(200);
    const own = await nextEphemeral();
    expect(own.body).toMatchObject({ user: MAKER });
    expect(own.body.text).toMatch(/you cannot decide it/);
    expect((await press(approve, TELLER)).status).toBe(200);
    expect((await nextEphemeral()).body.text).toMatch(/not an approver/);
    // A non-approver does not even get the reason modal.
    await press(buttonOf(held.body.blocks, 'momo_approval_reject'), TELLER);
    expect((await nextEphemeral()).body.text).toMatch(/not an approver/);
    // A checker pressing a button naming no held payment (forged or mangled) changes nothing either.
    for (const value of ['ffffffffffffffffffffffff', '../approval:x', '']) {
      expect((await press({ action_id: 'momo_approval_approve', value }, CHECKER)).status).toBe(200);
      expect((await nextEphemeral()).body.text).toMatch(/not known here/);
    }
    expect(fake.of('chat.update')).toEqual([]);
    expect(paymentsFor('rent')).toEqual([]);
  });

  /** Our ref of the held payment (its Duplicate-Check-Key), as the operator's search lists it. */
  let heldRef: string;
  it('keeps the hold when Redis is emptied: still listed as held, on the board, and the maker still refused', async () => {
    const redis = new Redis(`redis://127.0.0.1:${redisServer!.port}`);
    try {
      expect(await redis.dbsize()).toBeGreaterThan(0);
      await redis.flushall();
      expect(await redis.dbsize()).toBe(0);
    } finally {
      redis.disconnect();
    }
    const listed = (await (await fetch(`${running.url}/ops/payments.json?state=held`)).json()) as {
      items: Array<{ key: string; amount: string; user: string }>;
    };
    expect(listed.items).toEqual([expect.objectContaining({ amount: '200000', user: MAKER })]);
    heldRef = listed.items[0]!.key;
    const waiting = await running.approvals.held.waiting();
    expect(waiting.map((h) => [h.key, h.state, h.board?.ts])).toEqual([[heldRef, 'held', heldTs]]);
    await press(buttonOf(held.body.blocks, 'momo_approval_approve'), MAKER);
    expect((await nextEphemeral()).body.text).toMatch(/you cannot decide it/);
    expect(paymentsFor('rent')).toEqual([]);
  });

  it('pays once when two checkers approve at once (and one presses again), under the key made when the maker confirmed', async () => {
    const approve = buttonOf(held.body.blocks, 'momo_approval_approve');
    const answers = await Promise.all([press(approve, CHECKER), press(approve, CHECKER2), press(approve, CHECKER)]);
    for (const answer of answers) expect(answer.status).toBe(200);
    const updated = await nextUpdate();
    expect(updated.body).toMatchObject({ channel: APPROVALS, ts: heldTs });
    const line = JSON.stringify(updated.body.blocks);
    expect(line).toMatch(/Approved by <@UCHECK[12]>/);
    expect(line).toMatch(/Payment MC-[A-Z0-9]+ \(service \d+\) sent/);
    expect(updated.body.blocks.filter((b: Record<string, any>) => b.type === 'actions')).toEqual([]);
    // The two who lost are told so, ephemerally.
    expect((await nextEphemeral()).body.text).toMatch(/already decided/);
    expect((await nextEphemeral()).body.text).toMatch(/already decided/);
    const made = paymentsFor('rent');
    expect(made).toHaveLength(1);
    expect(made[0]).toMatchObject({
      amount: '200000.00',
      currency: 'UGX',
      metadata: { chat: `slack:${TEAM}:${MAKER}`, ref: heldRef },
    });
    await dm(MAKER, /payment MC-[A-Z0-9]+ \(service \d+\) of .+ approved by ucheck[12] and sent\./);
    // Who authorised it, in the database before it was sent: the row and the journal's event.
    const [row] = await running.approvals.held.byRefs([heldRef]).then((m) => [...m.values()]);
    expect(row).toMatchObject({ state: 'approved', decision: { channel: 'slack' }, outcome: { kind: 'sent' } });
    expect([CHECKER, CHECKER2]).toContain(row!.decision!.userId);
  });

  it('asks a reason when a checker rejects, refuses an empty one, and tells the maker; nothing is sent', async () => {
    expect(await pay(MAKER, '150000', 'deposit')).toMatch(/needs approval/);
    const second = await nextHeld();
    await press(buttonOf(second.body.blocks, 'momo_approval_reject'), CHECKER);
    const modal = (await fake.next('views.open')).body.view;
    expect(modal.callback_id).toBe('momo_approval_reject');
    const empty = await sender.submit(modal, '   ', CHECKER);
    expect(await empty.json()).toMatchObject({
      response_action: 'errors',
      errors: { reason: expect.stringMatching(/say why/) },
    });
    // The maker cannot reject their own payment through the modal either.
    const own = await sender.submit(modal, 'not mine to decide', MAKER);
    expect(await own.json()).toMatchObject({
      response_action: 'errors',
      errors: { reason: expect.stringMatching(/you cannot decide it/) },
    });
    expect((await sender.submit(modal, 'Wrong <!channel> account', CHECKER)).status).toBe(200);
    const updated = await nextUpdate();
    const line = JSON.stringify(updated.body.blocks);
    expect(line).toContain('Rejected by <@UCHECK1>');
    expect(line).toContain('Wrong &lt;!channel&gt; account');
    await dm(MAKER, /rejected by ucheck1: Wrong <!channel> account\. Nothing was sent/);
    // Approve after the rejection changes nothing.
    await press(buttonOf(second.body.blocks, 'momo_approval_approve'), CHECKER2);
    expect((await nextEphemeral()).body.text).toMatch(/already decided/);
    expect(paymentsFor('deposit')).toEqual([]);
  });

  it("tells the maker the service's own approvers' states: approval needed, requested, and rejected with its reason", async () => {
    running.sandbox!.controls.setOrganization({ approvalRules: [{ currency: 'UGX', above: '250000' }] });
    expect(await pay(MAKER, '300000', 'equipment')).toMatch(/needs approval/);
    const third = await nextHeld();
    await press(buttonOf(third.body.blocks, 'momo_approval_approve'), CHECKER);
    await nextUpdate();
    await dm(MAKER, /approved by ucheck1/);
    await running.sandbox!.controls.advanceClock(600);
    await dm(MAKER, /needs approval: an approver of your organization/);
    await dm(MAKER, /approvers were asked to approve/);
    const [payment] = paymentsFor('equipment');
    running.sandbox!.controls.decidePayment(Number(payment!.id), 'reject', { reason: 'Budget frozen' });
    await running.sandbox!.controls.idle();
    await dm(MAKER, /was rejected: Budget frozen/);
  });
});
