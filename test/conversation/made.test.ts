import { afterAll, describe, expect, it } from 'vitest';
import type { FlowCalls } from '../../flows/calls.js';
import { MadeRecords, recordMade } from '../../src/conversation/calls/made-records.js';
import { NotCalled } from '../../src/conversation/flow/flow-runtime.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { RedisStore } from '../../src/store/redis-store.js';
import type { Store } from '../../src/store/types.js';
import { Journal, moneyJournal, type Intent, type MoneyJournal } from '../../src/journal/index.js';
import { SHORT_REF_SHAPE } from '../../src/journal/short-ref.js';
import { JournalWriter } from '../../src/journal/writer.js';
import { MissingKeyError } from '../../src/momo/index.js';
import { createLogger } from '../../src/log.js';
import { forEachDatabase } from '../journal/databases.js';
import { inspector, REDIS_URL, uniquePrefix } from './redis-helper.js';

const logger = createLogger('silent');
const prefix = uniquePrefix('made');
const stores: Store[] = [];
afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
  await inspector(prefix).cleanup();
});

const storesOn: Array<[string, () => Store]> = [
  ['memory', () => new MemoryStore()],
  [
    'redis',
    () => {
      const s = new RedisStore({ url: REDIS_URL, keyPrefix: prefix });
      stores.push(s);
      return s;
    },
  ],
];

let n = 0;
const payInput = (key: string) => ({
  duplicateCheckKey: key,
  paymentType: 'money' as const,
  phonenumber: '+256772000001',
  amount: '5000',
  currency: 'UGX',
  description: 'lunch',
  metadata: { chat: 'ussd:+256700000001', ref: key },
});
const requestInput = (key: string, phone = '+256772000001') => ({
  duplicateCheckKey: key,
  phonenumber: phone,
  amount: '2000',
  currency: 'UGX',
  reason: 'fees',
  sendInstructions: true,
  metadata: { chat: 'telegram:9', ref: key },
});

/** Services whose creates answer what the test says, and note what the store held when they were called. */
function fakeServices(made: MadeRecords, answer: () => Promise<unknown>) {
  const seenAtCall: unknown[] = [];
  const create = async (input: { duplicateCheckKey: string }) => {
    seenAtCall.push(await made.byRef(input.duplicateCheckKey));
    return answer();
  };
  const calls = {
    createPayment: create,
    createCollectionRequest: create,
    purchaseData: create,
    purchasePin: create,
  } as unknown as FlowCalls;
  return { services: calls, seenAtCall };
}

describe.each(storesOn)('made records on the %s store', (_name, makeStore) => {
  it("writes the intent before the create is called, then links the service's id to it", async () => {
    const made = new MadeRecords({ store: makeStore(), logger });
    const key = `run-${++n}:pay`;
    const { services: calls, seenAtCall } = fakeServices(made, async () => ({ id: '77', state: 'new' }));
    expect(await recordMade(calls, made, logger).createPayment(payInput(key))).toEqual({ id: '77', state: 'new' });
    expect(seenAtCall).toEqual([
      expect.objectContaining({
        kind: 'payment',
        ref: key,
        chat: 'ussd:+256700000001',
        amount: '5000',
        currency: 'UGX',
        payee: '+256772000001',
      }),
    ]);
    expect(seenAtCall[0]).not.toHaveProperty('id');
    expect(await made.byId('payment', '77')).toMatchObject({ ref: key, id: '77', accepted: true });
    expect(await made.byId('request', '77')).toBeNull();
    expect(await made.byId('payment', '78')).toBeNull();
  });

  it('links the answer from the record its intent wrote, without reading it again; a record changed since is read again, not overwritten', async () => {
    const store = makeStore();
    const reads: string[] = [];
    const get = store.get.bind(store);
    store.get = (key) => {
      reads.push(key);
      return get(key);
    };
    const made = new MadeRecords({ store, logger });
    const key = `run-${++n}:pay`;
    // The fake reads the record when called (fakeServices): only the reads after its answer count.
    const answer = async () => {
      reads.length = 0;
      return { id: '80', state: 'new' };
    };
    await recordMade(fakeServices(made, answer).services, made, logger).createPayment(payInput(key));
    expect(reads).toEqual([]);
    expect(await made.byId('payment', '80')).toMatchObject({ ref: key, id: '80', accepted: true });

    // Another writer changes the record while the create is out: the answer's write must keep its change.
    const changed = `run-${++n}:pay`;
    const { services: calls } = fakeServices(made, async () => {
      await made.refused(changed);
      return { id: '81', state: 'new' };
    });
    await recordMade(calls, made, logger).createPayment(payInput(changed));
    expect(await made.byRef(changed)).toMatchObject({ refused: true, accepted: true, id: '81' });
  });

  it('a lost answer leaves the intent without id; a refusal marks it refused', async () => {
    const made = new MadeRecords({ store: makeStore(), logger });
    const lost = `run-${++n}:pay`;
    const refusedKey = `run-${++n}:pay`;
    const wrapped = (failure: unknown) =>
      recordMade(fakeServices(made, () => Promise.reject(failure)).services, made, logger);
    await expect(wrapped({ code: 'connection' }).createPayment(payInput(lost))).rejects.toEqual({ code: 'connection' });
    await expect(wrapped({ code: 'validation', fields: {} }).createPayment(payInput(refusedKey))).rejects.toMatchObject(
      { code: 'validation' },
    );
    const open = await made.byRef(lost);
    expect(open).toMatchObject({ ref: lost });
    expect(open).not.toHaveProperty('id');
    expect(open).not.toHaveProperty('refused');
    expect(await made.byRef(refusedKey)).toMatchObject({ refused: true });
  });

  it('"already submitted" (no id) is accepted without an id; a repeated create keeps the first intent', async () => {
    let now = 1000;
    const made = new MadeRecords({ store: makeStore(), logger, now: () => now });
    const key = `run-${++n}:pay`;
    await recordMade(
      fakeServices(made, async () => ({ id: '', state: 'submitted' })).services,
      made,
      logger,
    ).createPayment(payInput(key));
    now = 5000;
    await recordMade(
      fakeServices(made, async () => ({ id: '', state: 'submitted' })).services,
      made,
      logger,
    ).createPayment(payInput(key));
    expect(await made.byRef(key)).toMatchObject({ accepted: true, created: 1000 });
    expect(await made.byRef(key)).not.toHaveProperty('id');
  });

  it('links a purchase by its reference, and tells each intent to its listeners', async () => {
    const made = new MadeRecords({ store: makeStore(), logger });
    const heard: string[] = [];
    made.onIntent(async (m) => void heard.push(`${m.kind} ${m.ref}`));
    const key = `run-${++n}:data`;
    const calls = recordMade(
      fakeServices(made, async () => ({ reference: 'SBXV1', status: 'successful' })).services,
      made,
      logger,
    );
    await calls.purchaseData({
      duplicateCheckKey: key,
      network: 'mtn',
      datacode: '1',
      phonenumber: '+2348030000001',
      amount: '500',
      metadata: { chat: 'telegram:1', ref: key },
    });
    expect(heard).toEqual([`purchase ${key}`]);
    expect(await made.byId('purchase', 'SBXV1')).toMatchObject({ ref: key, payee: '+2348030000001', currency: 'NGN' });
  });

  it("records a pin purchase at its whole price: two WAEC pins at 3,900 NGN are 7,800 NGN, as the phone's total says", async () => {
    const made = new MadeRecords({ store: makeStore(), logger });
    const journalled: Array<{ amount: string; currency: string }> = [];
    const journal = {
      intend: async (intent: { amount: string; currency: string }) => void journalled.push(intent),
      write: () => {},
      who: () => ({ role: 'staff' }),
    } as unknown as MoneyJournal;
    const key = `run-${++n}:pin`;
    const sent: unknown[] = [];
    const calls = recordMade(
      fakeServices(made, async () => ({ reference: 'SBXP1', status: 'successful', pins: ['1', '2'] })).services,
      made,
      logger,
      { journal },
    );
    await calls.purchasePin({
      channel: 'ussd',
      userId: '+2348030000002',
      duplicateCheckKey: key,
      serviceType: 'waec',
      productCode: '1',
      accountNumber: '0123456789',
      gsmNo: '+2348030000002',
      amount: '3900',
      quantity: 2,
      metadata: { chat: 'ussd:+2348030000002', ref: key },
    });
    sent.push(await made.byRef(key));
    expect(sent[0]).toMatchObject({ amount: '7800', currency: 'NGN' });
    expect(journalled).toEqual([expect.objectContaining({ amount: '7800', currency: 'NGN' })]);
  });

  it("an intent that cannot be written stops the create (nothing is sent) and is thrown as NotCalled, not as the service's answer: the runner repeats the step later", async () => {
    const made = new MadeRecords({ store: makeStore(), logger });
    made.onIntent(async () => {
      throw new Error('queue down');
    });
    let called = false;
    const calls = recordMade(
      {
        createPayment: async () => {
          called = true;
          return { id: '1', state: 'new' };
        },
      } as unknown as FlowCalls,
      made,
      logger,
    );
    const key = `run-${++n}:pay`;
    await expect(calls.createPayment(payInput(key))).rejects.toBeInstanceOf(NotCalled);
    expect(called).toBe(false);
    // Not marked refused: an earlier attempt under the same key may have reached the service.
    expect((await made.byRef(key))?.refused).toBeUndefined();
  });

  it('a create without its ref (empty or missing) is thrown before anything: no record, no call', async () => {
    const made = new MadeRecords({ store: makeStore(), logger });
    let called = 0;
    const calls = recordMade(
      {
        createPayment: async () => {
          called++;
          return { id: '1', state: 'new' };
        },
      } as unknown as FlowCalls,
      made,
      logger,
    );
    await expect(calls.createPayment(payInput(''))).rejects.toBeInstanceOf(MissingKeyError);
    await expect(
      calls.createPayment({ ...payInput('x'), duplicateCheckKey: undefined as unknown as string }),
    ).rejects.toBeInstanceOf(MissingKeyError);
    expect(called).toBe(0);
  });

  it('one open request accepts one collection; the same collection asked again gets the same request', async () => {
    const made = new MadeRecords({ store: makeStore(), logger });
    const phone = `+2567720${String(++n).padStart(5, '0')}`;
    const [a, b] = [`run-${++n}:request`, `run-${++n}:request`];
    const calls = recordMade(
      fakeServices(made, async () => ({ id: String(++n), status: 'pending' })).services,
      made,
      logger,
    );
    await calls.createCollectionRequest(requestInput(a, phone));
    await calls.createCollectionRequest(requestInput(b, phone));
    // Two collections at once for the two requests, a third for none; a repeat of the first.
    const [one, two, three] = await Promise.all(
      ['TX1', 'TX2', 'TX3'].map((tx) => made.consumeOpenRequest(phone, '2000.00', 'ugx', tx)),
    );
    expect([one, two].sort()).toEqual([a, b].sort());
    expect(three).toBeNull();
    expect(await made.consumeOpenRequest(phone, '2000', 'UGX', 'TX1')).toBe(one);
    expect(await made.consumeOpenRequest(phone, '2000', 'KES', 'TX4')).toBeNull();
  });
});

forEachDatabase('our records rebuilt from the journal', (open) => {
  it('an intent committed but whose write failed (a timeout after the commit) is read back: nothing sent, journalled refused', async () => {
    const journal = new Journal((await open()).db);
    const writer = new JournalWriter({ journal, logger });
    const money = moneyJournal(journal, writer, () => ({ role: 'member' }));
    // The server takes the intent; its answer never comes back.
    const lost = {
      ...money,
      intend: async (i: Intent) => {
        await money.intend(i);
        throw new Error('Query read timeout');
      },
    };
    let called = 0;
    const calls = recordMade(
      {
        createPayment: async () => {
          called++;
          return { id: '1', state: 'new' };
        },
      } as unknown as FlowCalls,
      new MadeRecords({ store: new MemoryStore(), logger }),
      logger,
      { journal: lost },
    );
    const ref = `doubt-${++n}:pay`;
    await expect(calls.createPayment(payInput(ref))).rejects.toMatchObject({ code: 'not_recorded' });
    expect(called).toBe(0);
    await writer.settled();
    expect((await journal.byRef(ref))?.state).toBe('refused');
    expect((await journal.timeline(ref)).map((e) => e.type)).toEqual(['intent', 'refusal']);

    // One the server never took: nothing to correct, nothing written.
    const never = { ...money, intend: async () => Promise.reject(new Error('connection refused')) };
    const other = `doubt-${++n}:pay`;
    await expect(
      recordMade({} as FlowCalls, new MadeRecords({ store: new MemoryStore(), logger }), logger, {
        journal: never,
      }).createPayment(payInput(other)),
    ).rejects.toMatchObject({ code: 'not_recorded' });
    await writer.settled();
    expect(await journal.timeline(other)).toEqual([]);
  });

  it("gives the journal's short ref with the result and keeps it with the record, written before the call", async () => {
    const journal = new Journal((await open()).db);
    const writer = new JournalWriter({ journal, logger });
    const money = moneyJournal(journal, writer, () => ({ role: 'member' }));
    const made = new MadeRecords({ store: new MemoryStore(), logger });
    const ref = `short-${++n}:pay`;
    let atCall: string | undefined;
    const calls = recordMade(
      {
        createPayment: async () => {
          atCall = (await journal.byRef(ref))?.short_ref;
          return { id: '12', state: 'new' };
        },
      } as unknown as FlowCalls,
      made,
      logger,
      { journal: money },
    );
    const result = await calls.createPayment(payInput(ref));
    expect(atCall).toMatch(SHORT_REF_SHAPE);
    expect(result).toEqual({ id: '12', state: 'new', shortRef: atCall });
    expect(await made.byRef(ref)).toMatchObject({ id: '12', shortRef: atCall });
    await writer.settled();
  });

  it('a create whose answer was lost is thrown and kept with our short ref; a refusal is thrown as it came', async () => {
    const journal = new Journal((await open()).db);
    const writer = new JournalWriter({ journal, logger });
    const money = moneyJournal(journal, writer, () => ({ role: 'member' }));
    const made = new MadeRecords({ store: new MemoryStore(), logger });
    const wrapped = (failure: unknown) =>
      recordMade(fakeServices(made, () => Promise.reject(failure)).services, made, logger, { journal: money });
    const lost = `short-${++n}:pay`;
    const thrown: unknown = await wrapped({ code: 'connection' })
      .createPayment(payInput(lost))
      .catch((e: unknown) => e);
    const short = (await journal.byRef(lost))?.short_ref;
    expect(short).toMatch(SHORT_REF_SHAPE);
    // The screen says "Ref MC-…" and the follow-up that finds the payment tells it by the same ref.
    expect(thrown).toEqual({ code: 'connection', shortRef: short });
    expect(await made.byRef(lost)).toMatchObject({ ref: lost, shortRef: short });
    const refused = `short-${++n}:pay`;
    await expect(wrapped({ code: 'validation', fields: {} }).createPayment(payInput(refused))).rejects.toEqual({
      code: 'validation',
      fields: {},
    });
    await writer.settled();
  });

  it('a record the store lost (a failover) is rebuilt from the journal by its ref, linked to its id again', async () => {
    const journal = new Journal((await open()).db);
    const ref = `lost-${++n}:pay`;
    await journal.intend({
      ref,
      kind: 'payment',
      amount: '6000',
      currency: 'UGX',
      payee: '+256772000001',
      channel: 'ussd',
      channelUser: '+256700333100',
      chat: 'ussd:+256700333100',
      role: 'member',
      flow: 'pay',
    });
    await journal.append(Journal.answerEvent(ref, { serviceId: '77', serviceState: 'new' }));
    // The store the record was written to is gone; this one (the new master) never had it.
    const store = new MemoryStore();
    expect(await new MadeRecords({ store, logger }).byRef(ref)).toBeNull();
    const made = new MadeRecords({ store, logger, journal });
    expect(await made.byId('payment', '77')).toBeNull();
    const rebuilt = await made.byRef(ref);
    expect(rebuilt).toMatchObject({
      kind: 'payment',
      ref,
      chat: 'ussd:+256700333100',
      amount: '6000',
      currency: 'UGX',
      payee: '+256772000001',
      id: '77',
      accepted: true,
    });
    // Written back: found by the service's id too, without the journal.
    expect(await new MadeRecords({ store, logger }).byId('payment', '77')).toMatchObject({ ref });
    // Nothing of a ref the journal does not hold, nor of an operation that is not a record of ours.
    expect(await made.byRef('never-made')).toBeNull();
  });

  it("a stored record that lost the write keeping our short ref gets it from the journal, not the service's id", async () => {
    const journal = new Journal((await open()).db);
    const ref = `unnamed-${++n}:pay`;
    const shortRef = await journal.intend({
      ref,
      kind: 'payment',
      amount: '6020',
      currency: 'UGX',
      payee: '+256772000001',
      channel: 'ussd',
      channelUser: '+256700333102',
      chat: 'ussd:+256700333102',
      role: 'member',
      flow: 'pay',
    });
    // The intent reached the new master before the call; the write that kept the short ref with the answer did not.
    const store = new MemoryStore();
    await new MadeRecords({ store, logger }).intend({
      kind: 'payment',
      ref,
      chat: 'ussd:+256700333102',
      amount: '6020',
      currency: 'UGX',
      payee: '+256772000001',
    });
    expect((await new MadeRecords({ store, logger }).byRef(ref))?.shortRef).toBeUndefined();
    const made = new MadeRecords({ store, logger, journal });
    expect(await made.byRef(ref)).toMatchObject({ ref, shortRef });
    // Kept with the record: found so without the journal too.
    expect(await new MadeRecords({ store, logger }).byRef(ref)).toMatchObject({ shortRef });
  });
});
