/**
 * The outcomes owed (src/journal/owed.ts, migration 0310) on both engines: a row written in the intent's own
 * statement (none for a held intent, one when it is approved and intended again), marked in doubt, found due,
 * claimed once, moved on by a check, settled only as claimed and with the operation's state; one leader at a
 * time; a later build's row left to that build's poller (migration 0460), any build's once that build is gone.
 */
import pino from 'pino';
import { expect, it } from 'vitest';
import { Journal } from '../../src/journal/journal.js';
import { LATER_BUILD_WAITS_MS, OwedOutcomes } from '../../src/journal/owed.js';
import type { MadeRecords } from '../../src/conversation/calls/made-records.js';
import { owedPoller } from '../../src/notifications/owed-poller.js';
import { forEachDatabase } from './databases.js';
import { anIntent } from './intents.js';

const T0 = new Date('2026-11-20T10:00:00Z');
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);
const owedOf = (ref: string) => ({ record: { kind: 'payment', ref, amount: '1500.50' }, checkAt: at(180) });

forEachDatabase('owed outcomes', (open, engine) => {
  it('is written with the intent, not for a held one, and once for a held one approved', async () => {
    const database = await open();
    const journal = new Journal(database.db);
    const owed = new OwedOutcomes(database);
    await journal.intend(anIntent('ow-1', { owed: owedOf('ow-1') }));
    await journal.intend(anIntent('ow-1', { owed: { ...owedOf('ow-1'), checkAt: at(999) } }));
    expect(await owed.byRef('ow-1')).toMatchObject({
      chat: 'ussd:+256772999001',
      owed: { kind: 'payment', ref: 'ow-1', amount: '1500.50' },
      reason: 'intent',
      step: 0,
      tries: 0,
      next_check: at(180),
      settled_at: null,
      outcome: null,
    });
    await journal.intend(anIntent('ow-held', { state: 'held', owed: owedOf('ow-held') }));
    expect(await owed.byRef('ow-held')).toBeUndefined();
    await journal.approvalDecided('ow-held', { decision: 'approved', by: 'slack:U9' });
    await journal.intend(anIntent('ow-held', { owed: owedOf('ow-held') }));
    expect(await owed.byRef('ow-held')).toMatchObject({ reason: 'intent', settled_at: null });
    // An intent without it has none.
    await journal.intend(anIntent('ow-none'));
    expect(await owed.byRef('ow-none')).toBeUndefined();
    expect(await owed.inDoubt('ow-none', 'conflict')).toBe(false);
  });

  it('is due, claimed once, moved on by a check, and settled only as claimed', async () => {
    const database = await open();
    const journal = new Journal(database.db);
    const owed = new OwedOutcomes(database);
    await journal.intend(anIntent('ow-2', { owed: owedOf('ow-2') }));
    expect(await owed.inDoubt('ow-2', 'conflict')).toBe(true);
    expect((await owed.due(at(179), 10)).map((r) => r.ref)).not.toContain('ow-2');
    const [due] = (await owed.due(at(180), 10)).filter((r) => r.ref === 'ow-2');
    expect(due).toMatchObject({ reason: 'conflict', state: 'intended', service_id: null, told_state: null });

    const claimed = await owed.claim('ow-2', at(180), 60_000);
    expect(claimed).toMatchObject({ tries: 1, next_check: at(240) });
    expect(await owed.claim('ow-2', at(181), 60_000)).toBeNull();

    // A check that asks for a later one leaves it open.
    expect(await owed.reschedule('ow-2', 1, at(480))).toBe(true);
    expect(await owed.settle(claimed!, at(200))).toBe(false);
    // Claimed again at that time, settled with the operation's state.
    const again = await owed.claim('ow-2', at(480), 60_000);
    expect(again).toMatchObject({ step: 1, tries: 2, next_check: at(600) });
    await journal.answered('ow-2', { serviceId: 'svc-2' });
    await journal.stateReported('ow-2', { state: 'completed', source: 'read' });
    expect(await owed.settle(again!, at(481))).toBe(true);
    expect(await owed.byRef('ow-2')).toMatchObject({ settled_at: at(481), outcome: 'completed' });
    expect((await owed.due(at(10_000), 10)).map((r) => r.ref)).not.toContain('ow-2');
    expect(await owed.reschedule('ow-2', 2, at(900))).toBe(false);
  });

  it(`leads one at a time (${engine})`, async () => {
    const database = await open();
    const owed = new OwedOutcomes(database);
    const other = new OwedOutcomes(engine === 'postgres' ? await open({ fresh: true }) : database);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const first = owed.asLeader(async () => {
      entered();
      await held;
      return 'first';
    });
    await inside;
    expect(await (engine === 'postgres' ? other : owed).asLeader(async () => 'second')).toBeNull();
    release();
    expect(await first).toBe('first');
    expect(await other.asLeader(async () => 'after')).toBe('after');
  });

  it("leaves a later build's row to its poller, and any build works a row of none", async () => {
    const database = await open();
    const journal = new Journal(database.db);
    const owed = new OwedOutcomes(database);
    const B = 1_700_000_000_000;
    const due = at(5000);
    const write = (ref: string, build?: number, checkAt = due) =>
      journal.intend(anIntent(ref, { owed: { ...owedOf(ref), checkAt, ...(build === undefined ? {} : { build }) } }));
    await write('ow-later', B + 1);
    await write('ow-earlier', B - 1);
    await write('ow-mine', B);
    await write('ow-nobuild');
    expect(Number((await owed.byRef('ow-later'))!.build)).toBe(B + 1);
    expect((await owed.byRef('ow-nobuild'))!.build).toBeNull();

    const pollerOf = (build: number, now: Date) => {
      const checked: string[] = [];
      const poller = owedPoller({
        owed,
        made: { restore: async () => {} } as unknown as MadeRecords,
        followUp: { check: async ({ ref }) => void checked.push(ref) },
        logger: pino({ level: 'silent' }),
        build,
        now: () => now.getTime(),
        batch: 100,
      });
      return { checked, poller };
    };
    const ours = ['ow-later', 'ow-earlier', 'ow-mine', 'ow-nobuild'];

    // The earlier build's poller: neither read nor claimed, left as it was.
    expect((await owed.due(due, 100, B)).map((r) => r.ref)).not.toContain('ow-later');
    expect(await owed.claim('ow-later', due, 60_000, B)).toBeNull();
    const older = pollerOf(B, due);
    await older.poller.tick();
    expect(older.checked.filter((ref) => ours.includes(ref)).sort()).toEqual(['ow-earlier', 'ow-mine', 'ow-nobuild']);
    expect(await owed.byRef('ow-later')).toMatchObject({ tries: 0, next_check: due, settled_at: null });

    // The later build's poller takes it.
    const later = pollerOf(B + 1, due);
    await later.poller.tick();
    expect(later.checked.filter((ref) => ours.includes(ref))).toEqual(['ow-later']);
    expect(await owed.byRef('ow-later')).toMatchObject({ tries: 1, settled_at: expect.any(Date) });

    // A row of a build rolled back (none of its pollers left): the earlier build works it once it has waited.
    const gone = at(6000);
    await write('ow-gone', B + 1, gone);
    const waited = new Date(gone.getTime() + LATER_BUILD_WAITS_MS);
    const early = pollerOf(B, new Date(waited.getTime() - 1000));
    await early.poller.tick();
    expect(early.checked).not.toContain('ow-gone');
    expect(await owed.byRef('ow-gone')).toMatchObject({ tries: 0, settled_at: null });
    const rolledBack = pollerOf(B, waited);
    await rolledBack.poller.tick();
    expect(rolledBack.checked).toContain('ow-gone');
    expect(await owed.byRef('ow-gone')).toMatchObject({ tries: 1, settled_at: waited });
  });
});
