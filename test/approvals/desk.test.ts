/**
 * The approval desk over its database (PostgreSQL, two desks on two connections as two processes; and PGlite):
 * holding sends nothing and posts once per key; a decision is taken once, by a conditional update the maker's
 * own identity or person cannot pass (checked by the database too); Approve sends under the maker's key with
 * the maker's limits and daily total counted then; expiry is a row state told to the maker; a sending cut short
 * is sent again by the sweep under the same key, and a telling that failed is told again; a board that cannot
 * be reached holds nothing.
 */
import { sql } from 'kysely';
import { beforeEach, expect, it } from 'vitest';
import { ApprovalDesk, type ApprovalBoard, type HeldPayment } from '../../src/approvals/desk.js';
import { HELD, type FlowCalls } from '../../flows/calls.js';
import { failureMessages, failureText } from '../../flows/failure.js';
import { madeNothing, type Params } from '../../flows/types.js';
import { AccessPolicy } from '../../src/conversation/calls/access-policy.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import type { Address } from '../../src/conversation/types.js';
import type { Store } from '../../src/store/types.js';
import type { Database } from '../../src/journal/database.js';
import { Journal } from '../../src/journal/journal.js';
import { createLogger } from '../../src/log.js';
import { forEachDatabase } from '../journal/databases.js';

const POLICY = {
  roles: {
    teller: {
      flows: ['pay'],
      perPaymentLimit: { UGX: '400000' },
      dailyLimit: { UGX: '500000' },
      approvalAbove: { UGX: '100000' },
    },
    manager: {
      flows: ['pay'],
      perPaymentLimit: { '*': '1000000' },
      dailyLimit: { '*': '5000000' },
      approvalAbove: { '*': '100000' },
      approve: true,
    },
    finance: { flows: [], perPaymentLimit: {}, dailyLimit: {}, approve: true },
  },
  users: {
    slack: {
      UMAKER: { role: 'teller' },
      UMANAGER: { role: 'manager' },
      UFIN: { role: 'finance' },
      UFIN2: { role: 'finance' },
    },
    telegram: { '42': { role: 'teller' } },
  },
};

/** A fake service behind the desk: it counts creates per Duplicate-Check-Key, as the service deduplicates them. */
class FakeService {
  readonly creates: string[] = [];
  fail?: () => unknown;
  services(policy: AccessPolicy, store: Store): FlowCalls {
    const used: Pick<FlowCalls, 'reserveSpend' | 'createPayment'> = {
      reserveSpend: (input) => policy.reserveSpend(store, { ...input, channel: input.channel as 'slack' }),
      createPayment: async (input) => {
        if (this.fail) throw this.fail();
        const again = this.creates.includes(input.duplicateCheckKey);
        this.creates.push(input.duplicateCheckKey);
        return again ? { kind: 'alreadySubmitted' as const } : { id: String(this.creates.length), state: 'new' };
      },
    };
    // The desk calls these two only.
    return used as FlowCalls;
  }
}

class FakeBoard implements ApprovalBoard {
  readonly posts: HeldPayment[] = [];
  readonly updates: HeldPayment[] = [];
  down = false;
  async post(held: HeldPayment) {
    if (this.down) throw new Error('channel_not_found');
    this.posts.push(held);
    return { channel: 'C1', ts: String(this.posts.length) };
  }
  async update(held: HeldPayment) {
    this.updates.push(held);
  }
}

const payment = (key: string, amount: string, userId = 'UMAKER', channel = 'slack') => ({
  channel,
  userId,
  duplicateCheckKey: key,
  paymentType: 'money' as const,
  phonenumber: '+256772000001',
  amount,
  currency: 'UGX',
  description: 'rent',
  metadata: { chat: `${channel}:T1:${userId}`, ref: key },
});

forEachDatabase('approval desk', (open, engine) => {
  let clock: number;
  let service: FakeService;
  let board: FakeBoard;
  let told: Array<{ address: Address; key: string; params: Params }>;
  let policy: AccessPolicy;
  let store: Store;
  /** Fails the next tellings while above zero. */
  let tellFailures: number;

  /** Another process: on PostgreSQL a connection of its own; PGlite is one process's. */
  const database = async (another = false): Promise<Database> =>
    open(another && engine === 'postgres' ? { fresh: true } : {});
  const newDesk = async (another = false): Promise<{ desk: ApprovalDesk; guarded: FlowCalls }> => {
    const calls = service.services(policy, store);
    const desk = new ApprovalDesk({
      db: (await database(another)).db,
      policy,
      calls,
      ttlHours: 24,
      tell: async (address, key, params) => {
        if (tellFailures > 0) {
          tellFailures -= 1;
          throw new Error('chat_not_found');
        }
        told.push({ address, key, params });
      },
      logger: createLogger('silent'),
      now: () => clock,
    });
    desk.attach(board);
    return { desk, guarded: desk.guard(calls) };
  };
  /** What the pay flow does when the maker confirms: reserve, then create. */
  const confirm = async (guarded: FlowCalls, input: ReturnType<typeof payment>) => {
    await guarded.reserveSpend({
      channel: input.channel,
      userId: input.userId,
      flow: 'pay',
      amount: input.amount,
      currency: 'UGX',
      duplicateCheckKey: input.duplicateCheckKey,
    });
    return guarded.createPayment(input);
  };
  /** Keys of their own per test: the database is shared by the tests of one engine. */
  let run = 0;
  const key = (name: string) => `${name}-${run}`;

  beforeEach(() => {
    run += 1;
    clock = Date.UTC(2026, 10, 23, 9) + run * 3600 * 1000;
    service = new FakeService();
    board = new FakeBoard();
    told = [];
    tellFailures = 0;
    store = new MemoryStore();
    policy = new AccessPolicy(POLICY, { now: () => clock });
  });

  it('sends a payment at or below approvalAbove at once; holds one above it, posting it once however often the create repeats', async () => {
    const { desk, guarded } = await newDesk();
    expect(await confirm(guarded, payment(key('k-small'), '100000'))).toMatchObject({ id: '1' });
    expect(await confirm(guarded, payment(key('k-big'), '150000'))).toEqual(HELD);
    expect(await confirm(guarded, payment(key('k-big'), '150000'))).toEqual(HELD);
    expect(service.creates).toEqual([key('k-small')]);
    expect(board.posts.map((p) => [p.key, p.state, p.payment.amount])).toEqual([[key('k-big'), 'held', '150000']]);
    // The hold is a row (with the board's message) and its intent is in the journal, state held.
    expect(await desk.held.get(board.posts[0]!.id)).toMatchObject({
      state: 'held',
      maker: { channel: 'slack', userId: 'UMAKER' },
      board: { channel: 'C1', ts: '1' },
    });
    expect(await new Journal((await database()).db).byRef(key('k-big'))).toMatchObject({ state: 'held' });
    // Decided, so the later tests' sweeps (on the same database) do not expire it.
    await desk.decide(board.posts[0]!.id, { channel: 'slack', userId: 'UFIN' }, 'reject', 'done');
  });

  it('lets only an approver who is not the maker decide, once: concurrent approvals from two processes send one payment', async () => {
    const one = await newDesk();
    const two = await newDesk(true);
    await confirm(one.guarded, payment(key('k1'), '150000', 'UMANAGER'));
    const id = board.posts[0]!.id;
    expect(await one.desk.decide(id, { channel: 'slack', userId: 'UMANAGER' }, 'approve')).toMatchObject({
      ok: false,
      refusal: 'own_payment',
    });
    expect(await one.desk.decide(id, { channel: 'slack', userId: 'UMAKER' }, 'approve')).toMatchObject({
      ok: false,
      refusal: 'not_approver',
    });
    expect(await one.desk.decide('ffff', { channel: 'slack', userId: 'UFIN' }, 'approve')).toMatchObject({
      ok: false,
      refusal: 'unknown',
    });
    const results = await Promise.all([
      one.desk.decide(id, { channel: 'slack', userId: 'UFIN', name: 'fin' }, 'approve'),
      two.desk.decide(id, { channel: 'slack', userId: 'UFIN2', name: 'fin2' }, 'approve'),
      two.desk.decide(id, { channel: 'slack', userId: 'UFIN2', name: 'fin2' }, 'reject', 'late'),
      one.desk.decide(id, { channel: 'slack', userId: 'UFIN', name: 'fin' }, 'approve'),
    ]);
    expect(results.filter((r) => r.ok)).toHaveLength(1);
    expect(results.filter((r) => !r.ok).map((r) => !r.ok && r.refusal)).toEqual(['decided', 'decided', 'decided']);
    expect(service.creates).toEqual([key('k1')]);
    const final = await one.desk.held.get(id);
    expect(final).toMatchObject({ state: 'approved', outcome: { kind: 'sent', id: '1' } });
    expect(final!.decision).toMatchObject({ channel: 'slack', at: clock });
    expect(told.map((t) => t.key)).toEqual(['notify.approval.approved']);
    expect(told[0]!.address).toEqual({ channel: 'slack', conversationId: 'T1:UMANAGER' });
    expect(board.updates.at(-1)).toMatchObject({ state: 'approved', decision: { userId: final!.decision!.userId } });
    // The decision's event is in the journal with who: committed with the row, before the sending.
    const events = await new Journal((await database()).db).timeline(key('k1'));
    expect(events.find((e) => e.type === 'approval')?.data).toMatchObject({
      decision: 'approved',
      by: `slack:${final!.decision!.userId}`,
    });
  });

  it("refuses the maker's own decision in the database too: by identity, by person, and by an identity linked since", async () => {
    const { desk, guarded } = await newDesk();
    await confirm(guarded, payment(key('own'), '150000', 'UMANAGER'));
    const id = board.posts[0]!.id;
    const as = (userId: string, person?: string) => ({
      channel: 'slack' as const,
      userId,
      name: userId,
      at: clock,
      state: 'approved' as const,
      ...(person ? { person } : {}),
    });
    const times = { now: clock, sendingMs: 90_000, tellAfterMs: 120_000 };
    // Past the desk's own checks (a process whose directory is behind): the update itself refuses.
    expect(await desk.held.decide(id, as('UMANAGER'), times)).toBeNull();
    const makerPerson = (await desk.held.get(id))!.maker.person!;
    expect(await desk.held.decide(id, as('UFIN', makerPerson), times)).toBeNull();
    const { db } = await database();
    const now = new Date(clock);
    await sql`insert into persons (id, name, role, source, created, updated)
      values (${makerPerson}, 'Manager', 'manager', 'test', ${now}, ${now}) on conflict do nothing`.execute(db);
    await sql`insert into person_identities (channel, user_id, person_id, created)
      values ('slack', 'UMANAGER', ${makerPerson}, ${now}), ('slack', ${key('ULINKED')}, ${makerPerson}, ${now})`.execute(
      db,
    );
    expect(await desk.held.decide(id, as(key('ULINKED')), times)).toBeNull();
    // And a hand-written decision naming the maker is refused by the table's CHECK.
    await expect(
      sql`update held_payments set state = 'approved', checker_channel = maker_channel, checker_user = maker_user,
        decided_at = now() where id = ${id}`.execute(db),
    ).rejects.toThrow(/held_payments_not_own/);
    expect(await desk.held.get(id)).toMatchObject({ state: 'held' });
    expect(await desk.decide(id, { channel: 'slack', userId: 'UFIN' }, 'approve')).toMatchObject({ ok: true });
    expect(service.creates).toEqual([key('own')]);
  });

  it("counts the maker's limits and daily total when approved, not when held", async () => {
    const { desk, guarded } = await newDesk();
    // Held without touching the daily total: three of them pass 500000 together.
    for (const name of ['a', 'b', 'c']) expect(await confirm(guarded, payment(key(name), '200000'))).toEqual(HELD);
    const [a, b, c] = board.posts.map((p) => p.id);
    expect(await desk.decide(a!, { channel: 'slack', userId: 'UFIN' }, 'approve')).toMatchObject({
      ok: true,
      held: { outcome: { kind: 'sent' } },
    });
    expect(await desk.decide(b!, { channel: 'slack', userId: 'UFIN' }, 'approve')).toMatchObject({
      ok: true,
      held: { outcome: { kind: 'sent' } },
    });
    const third = await desk.decide(c!, { channel: 'slack', userId: 'UFIN' }, 'approve');
    expect(third).toMatchObject({
      ok: true,
      held: { outcome: { kind: 'refused', reason: 'more than 500000 UGX today' } },
    });
    expect(service.creates).toEqual([key('a'), key('b')]);
    expect(told.map((t) => t.key)).toEqual([
      'notify.approval.approved',
      'notify.approval.approved',
      'notify.approval.refused',
    ]);
  });

  it('rejects with the reason told to the maker in their own channel (Telegram here); nothing is sent', async () => {
    const { desk, guarded } = await newDesk();
    await confirm(guarded, payment(key('t1'), '300000', '42', 'telegram'));
    const id = board.posts[0]!.id;
    expect(
      await desk.decide(id, { channel: 'slack', userId: 'UFIN', name: 'fin' }, 'reject', 'Wrong account'),
    ).toMatchObject({ ok: true });
    expect(await desk.decide(id, { channel: 'slack', userId: 'UFIN2' }, 'approve')).toMatchObject({
      ok: false,
      refusal: 'decided',
    });
    expect(service.creates).toEqual([]);
    expect(told).toEqual([
      {
        address: { channel: 'telegram', conversationId: 'T1:42' },
        key: 'notify.approval.rejected',
        params: expect.objectContaining({ by: 'fin', reason: 'Wrong account', amount: '300000' }),
      },
    ]);
    expect(await desk.held.get(id)).toMatchObject({
      state: 'rejected',
      decision: { channel: 'slack', userId: 'UFIN', name: 'fin', reason: 'Wrong account', at: clock },
    });
  });

  it('expires a payment undecided after APPROVAL_TTL_HOURS: a row state, the sweep tells the maker, and a late press is refused', async () => {
    const { desk, guarded } = await newDesk();
    await confirm(guarded, payment(key('e1'), '300000'));
    const id = board.posts[0]!.id;
    clock += 23 * 3600 * 1000;
    await desk.sweep();
    expect((await desk.held.get(id))?.state).toBe('held');
    clock += 3600 * 1000;
    await desk.sweep();
    expect((await desk.held.get(id))?.state).toBe('expired');
    expect(await new Journal((await database()).db).byRef(key('e1'))).toMatchObject({ state: 'expired' });
    expect(told.map((t) => [t.key, t.params.hours])).toEqual([['notify.approval.expired', '24']]);
    expect(await desk.decide(id, { channel: 'slack', userId: 'UFIN' }, 'approve')).toMatchObject({
      ok: false,
      refusal: 'expired',
    });
    expect(service.creates).toEqual([]);
    expect(board.updates.map((u) => u.state)).toEqual(['expired']);
    clock += 10 * 60 * 1000;
    await desk.sweep();
    expect(told).toHaveLength(1);
  });

  it("sends an approval whose process died before sending, from the sweep, under the maker's key", async () => {
    const { desk, guarded } = await newDesk();
    await confirm(guarded, payment(key('d1'), '300000'));
    const id = board.posts[0]!.id;
    // What decide() committed before its process died: the decision, with the sending taken for 90 s.
    const decided = await desk.held.decide(
      id,
      { channel: 'slack', userId: 'UFIN', name: 'fin', at: clock, state: 'approved' },
      { now: clock, sendingMs: 90_000, tellAfterMs: 120_000 },
    );
    expect(decided).toMatchObject({ state: 'approved' });
    clock += 60 * 1000;
    await desk.sweep();
    expect(service.creates).toEqual([]);
    clock += 60 * 1000;
    await desk.sweep();
    expect(service.creates).toEqual([key('d1')]);
    expect(await desk.held.get(id)).toMatchObject({ state: 'approved', outcome: { kind: 'sent' } });
    expect(told.map((t) => t.key)).toEqual(['notify.approval.approved']);
    clock += 10 * 60 * 1000;
    await desk.sweep();
    expect(service.creates).toEqual([key('d1')]);
    expect(told).toHaveLength(1);
  });

  it('tells the maker again from the sweep when the telling failed, once it succeeds', async () => {
    const { desk, guarded } = await newDesk();
    await confirm(guarded, payment(key('f1'), '300000'));
    const id = board.posts[0]!.id;
    tellFailures = 1;
    expect(await desk.decide(id, { channel: 'slack', userId: 'UFIN' }, 'approve')).toMatchObject({ ok: true });
    expect(told).toEqual([]);
    clock += 3 * 60 * 1000;
    const other = await newDesk(true);
    await Promise.all([desk.sweep(), other.desk.sweep()]);
    expect(told.map((t) => t.key)).toEqual(['notify.approval.approved']);
    clock += 10 * 60 * 1000;
    await desk.sweep();
    expect(told).toHaveLength(1);
    expect(service.creates).toEqual([key('f1')]);
  });

  it('leaves an approved payment whose answer was lost to the notifications: told "being confirmed", never sent again', async () => {
    const { desk, guarded } = await newDesk();
    await confirm(guarded, payment(key('u1'), '300000'));
    const id = board.posts[0]!.id;
    service.fail = () => {
      service.creates.push(key('u1'));
      return { code: 'connection' };
    };
    expect(await desk.decide(id, { channel: 'slack', userId: 'UFIN' }, 'approve')).toMatchObject({
      ok: true,
      held: { outcome: { kind: 'unconfirmed' } },
    });
    expect(told.map((t) => t.key)).toEqual(['notify.approval.unconfirmed']);
    service.fail = undefined;
    clock += 10 * 60 * 1000;
    await desk.sweep();
    expect(service.creates).toEqual([key('u1')]);
  });

  it('holds nothing when the approvals channel cannot be reached: the maker is told nothing was sent', async () => {
    const { desk, guarded } = await newDesk();
    board.down = true;
    const failure = await confirm(guarded, payment(key('x1'), '300000')).then(
      () => undefined,
      (error: unknown) => error,
    );
    // A code of its own (not the service's 429, which proves nothing), and words saying nothing was sent.
    expect(failure).toMatchObject({ code: 'approvals_unavailable' });
    expect(madeNothing(failure)).toBe(true);
    const text = failureText(failure);
    expect(text).toEqual({ key: 'failure.approvals_unavailable' });
    expect(failureMessages.en[text.key]).toMatch(/Nothing was sent: please try again/);
    expect(failureMessages.sw[text.key]).toMatch(/Hakuna kilichotumwa: tafadhali jaribu tena/);
    expect((await desk.held.byRefs([key('x1')])).get(key('x1'))).toMatchObject({ state: 'cancelled' });
    expect(await new Journal((await database()).db).byRef(key('x1'))).toMatchObject({ state: 'cancelled' });
    clock += 48 * 3600 * 1000;
    await desk.sweep();
    expect(service.creates).toEqual([]);
    expect(told).toEqual([]);
  });

  it('leaves an approved payment whose create ends in 429 unconfirmed, not refused: an earlier attempt under the key may have been made', async () => {
    const { desk, guarded } = await newDesk();
    await confirm(guarded, payment(key('r1'), '300000'));
    const id = board.posts[0]!.id;
    service.fail = () => ({ code: 'rate_limited' });
    expect(await desk.decide(id, { channel: 'slack', userId: 'UFIN' }, 'approve')).toMatchObject({
      ok: true,
      held: { outcome: { kind: 'unconfirmed' } },
    });
    expect(told.map((t) => t.key)).toEqual(['notify.approval.unconfirmed']);
  });
});
