/**
 * The approval desk over a real store (memory, and real Redis: two desks on one Redis as two processes):
 * holding sends nothing and posts once per key; a decision is taken once; Approve sends under the maker's
 * key with the maker's limits and daily total counted then; expiry; a sending cut short is sent again by
 * the sweep under the same key; a board that cannot be reached holds nothing.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApprovalDesk, type ApprovalBoard, type HeldPayment } from '../../src/approvals/desk.js';
import { HELD, type FlowServices } from '../../flows/services.js';
import { failureMessages, failureText } from '../../flows/failure.js';
import { madeNothing, type Params } from '../../flows/types.js';
import { AccessPolicy } from '../../src/conversation/services/access-policy.js';
import { MemoryStore } from '../../src/conversation/store/memory-store.js';
import { RedisStore } from '../../src/conversation/store/redis-store.js';
import type { Address, SessionStore } from '../../src/conversation/types.js';
import { createLogger } from '../../src/log.js';
import { REDIS_URL, inspector, uniquePrefix } from '../conversation/redis-helper.js';

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
  services(policy: AccessPolicy, store: SessionStore): FlowServices {
    const used: Pick<FlowServices, 'reserveSpend' | 'createPayment'> = {
      reserveSpend: (input) => policy.reserveSpend(store, { ...input, channel: input.channel as 'slack' }),
      createPayment: async (input) => {
        if (this.fail) throw this.fail();
        const again = this.creates.includes(input.duplicateCheckKey);
        this.creates.push(input.duplicateCheckKey);
        return again ? { kind: 'alreadySubmitted' as const } : { id: String(this.creates.length), state: 'new' };
      },
    };
    // The desk calls these two only.
    return used as FlowServices;
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

for (const kind of ['memory', 'redis'] as const) {
  describe(`approval desk (${kind} store)`, () => {
    let stores: SessionStore[];
    let prefix: string;
    let clock: number;
    let service: FakeService;
    let board: FakeBoard;
    let told: Array<{ address: Address; key: string; params: Params }>;
    let policy: AccessPolicy;

    const newStore = (): SessionStore => {
      const store =
        kind === 'memory' ? (stores[0] ?? new MemoryStore()) : new RedisStore({ url: REDIS_URL, keyPrefix: prefix });
      stores.push(store);
      return store;
    };
    const newDesk = (store = newStore()): { desk: ApprovalDesk; guarded: FlowServices } => {
      const services = service.services(policy, store);
      const desk = new ApprovalDesk({
        store,
        policy,
        services,
        ttlHours: 24,
        tell: async (address, key, params) => void told.push({ address, key, params }),
        logger: createLogger('silent'),
        now: () => clock,
      });
      desk.attach(board);
      return { desk, guarded: desk.guard(services) };
    };
    /** What the pay flow does when the maker confirms: reserve, then create. */
    const confirm = async (guarded: FlowServices, input: ReturnType<typeof payment>) => {
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

    beforeEach(() => {
      stores = [];
      prefix = uniquePrefix('approvals');
      clock = Date.UTC(2026, 10, 23, 9);
      service = new FakeService();
      board = new FakeBoard();
      told = [];
      policy = new AccessPolicy(POLICY, { now: () => clock });
    });
    afterEach(async () => {
      for (const store of new Set(stores)) await store.close();
      if (kind === 'redis') await inspector(prefix).cleanup();
    });

    it('sends a payment at or below approvalAbove at once; holds one above it, posting it once however often the create repeats', async () => {
      const { guarded } = newDesk();
      expect(await confirm(guarded, payment('k-small', '100000'))).toMatchObject({ id: '1' });
      expect(await confirm(guarded, payment('k-big', '150000'))).toEqual(HELD);
      expect(await confirm(guarded, payment('k-big', '150000'))).toEqual(HELD);
      expect(service.creates).toEqual(['k-small']);
      expect(board.posts.map((p) => [p.key, p.state, p.payment.amount])).toEqual([['k-big', 'pending', '150000']]);
    });

    it('lets only an approver who is not the maker decide, once: concurrent approvals from two processes send one payment', async () => {
      const one = newDesk();
      const two = newDesk();
      await confirm(one.guarded, payment('k1', '150000', 'UMANAGER'));
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
      ]);
      expect(results.filter((r) => r.ok)).toHaveLength(1);
      expect(results.filter((r) => !r.ok).map((r) => !r.ok && r.refusal)).toEqual(['decided', 'decided']);
      expect(service.creates).toEqual(['k1']);
      const final = await one.desk.held.get(id);
      expect(final).toMatchObject({ state: 'approved', outcome: { kind: 'sent', id: '1' } });
      expect(told.map((t) => t.key)).toEqual(['notify.approval.approved']);
      expect(told[0]!.address).toEqual({ channel: 'slack', conversationId: 'T1:UMANAGER' });
      expect(board.updates.at(-1)).toMatchObject({ state: 'approved', decision: { userId: final!.decision!.userId } });
    });

    it("counts the maker's limits and daily total when approved, not when held", async () => {
      const { desk, guarded } = newDesk();
      // Held without touching the daily total: three of them pass 500000 together.
      for (const key of ['a', 'b', 'c']) expect(await confirm(guarded, payment(key, '200000'))).toEqual(HELD);
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
      expect(service.creates).toEqual(['a', 'b']);
      expect(told.map((t) => t.key)).toEqual([
        'notify.approval.approved',
        'notify.approval.approved',
        'notify.approval.refused',
      ]);
    });

    it('rejects with the reason told to the maker in their own channel (Telegram here); nothing is sent', async () => {
      const { desk, guarded } = newDesk();
      await confirm(guarded, payment('t1', '300000', '42', 'telegram'));
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
    });

    it('expires a payment undecided after APPROVAL_TTL_HOURS: the sweep tells the maker, and a late press is refused', async () => {
      const { desk, guarded } = newDesk();
      await confirm(guarded, payment('e1', '300000'));
      const id = board.posts[0]!.id;
      clock += 23 * 3600 * 1000;
      await desk.sweep();
      expect((await desk.held.get(id))?.state).toBe('pending');
      clock += 3600 * 1000;
      await desk.sweep();
      expect((await desk.held.get(id))?.state).toBe('expired');
      expect(told.map((t) => [t.key, t.params.hours])).toEqual([['notify.approval.expired', '24']]);
      expect(await desk.decide(id, { channel: 'slack', userId: 'UFIN' }, 'approve')).toMatchObject({
        ok: false,
        refusal: 'expired',
      });
      expect(service.creates).toEqual([]);
      expect(board.updates.map((u) => u.state)).toEqual(['expired']);
    });

    it("sends an approval whose process died before sending, from the sweep, under the maker's key", async () => {
      const { desk, guarded } = newDesk();
      await confirm(guarded, payment('d1', '300000'));
      const id = board.posts[0]!.id;
      // What decide() wrote before its process died: the decision, and the sweep's look two minutes on.
      await desk.held.update(id, (h) => ({
        ...h,
        state: 'approved',
        decision: { channel: 'slack', userId: 'UFIN', name: 'fin', at: clock },
      }));
      await desk.held.schedule(id, clock + 2 * 60 * 1000);
      clock += 60 * 1000;
      await desk.sweep();
      expect(service.creates).toEqual([]);
      clock += 2 * 60 * 1000;
      await desk.sweep();
      expect(service.creates).toEqual(['d1']);
      expect(await desk.held.get(id)).toMatchObject({ state: 'approved', outcome: { kind: 'sent' } });
      expect(told.map((t) => t.key)).toEqual(['notify.approval.approved']);
      await desk.sweep();
      expect(service.creates).toEqual(['d1']);
    });

    it('leaves an approved payment whose answer was lost to the notifications: told "being confirmed", never sent again', async () => {
      const { desk, guarded } = newDesk();
      await confirm(guarded, payment('u1', '300000'));
      const id = board.posts[0]!.id;
      service.fail = () => {
        service.creates.push('u1');
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
      expect(service.creates).toEqual(['u1']);
    });

    it('holds nothing when the approvals channel cannot be reached: the maker is told nothing was sent', async () => {
      const { desk, guarded } = newDesk();
      board.down = true;
      const failure = await confirm(guarded, payment('x1', '300000')).then(
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
      expect(await desk.held.due(clock + 48 * 3600 * 1000)).toEqual([]);
      expect(service.creates).toEqual([]);
    });

    it('leaves an approved payment whose create ends in 429 unconfirmed, not refused: an earlier attempt under the key may have been made', async () => {
      const { desk, guarded } = newDesk();
      await confirm(guarded, payment('r1', '300000'));
      const id = board.posts[0]!.id;
      service.fail = () => ({ code: 'rate_limited' });
      expect(await desk.decide(id, { channel: 'slack', userId: 'UFIN' }, 'approve')).toMatchObject({
        ok: true,
        held: { outcome: { kind: 'unconfirmed' } },
      });
      expect(told.map((t) => t.key)).toEqual(['notify.approval.unconfirmed']);
    });
  });
}
