import { describe, expect, it } from 'vitest';
import { countLines, parseArgs } from '../../src/reconciliation/args.js';
import {
  countOutcomes,
  expectedAtService,
  hasDifferences,
  match,
  ourWord,
  OUTCOMES,
  type Ours,
  type Theirs,
} from '../../src/reconciliation/match.js';
import { owesTelling } from '../../src/reconciliation/run.js';
import { notifyText } from '../../src/notifications/messages.js';

const ours = (changes: Partial<Ours> = {}): Ours => ({
  ref: 'r1',
  kind: 'payment',
  serviceId: '101',
  amount: '1500',
  currency: 'UGX',
  payee: '+256772123456',
  state: 'completed',
  toldState: 'completed',
  ...changes,
});
const theirs = (changes: Partial<Theirs> = {}): Theirs => ({
  kind: 'payment',
  id: '101',
  ref: 'r1',
  state: 'processed',
  amount: '1500.00',
  currency: 'UGX',
  phone: '+256772123456',
  ...changes,
});

describe("ourWord: the service's states in our words", () => {
  const table: Array<['payment' | 'request', string, string]> = [
    ['payment', 'new', 'submitted'],
    ['payment', 'approval_needed', 'submitted'],
    ['payment', 'scheduled', 'submitted'],
    ['payment', 'processed', 'completed'],
    ['payment', 'completed', 'completed'],
    ['payment', 'processed_with_errors', 'failed'],
    ['payment', 'rejected', 'rejected'],
    ['payment', 'cancelled', 'cancelled'],
    ['payment', 'a_state_not_in_the_contract', 'submitted'],
    ['request', 'pending', 'submitted'],
    ['request', 'successful', 'completed'],
    ['request', 'failed', 'failed'],
    ['request', 'expired', 'expired'],
    ['request', 'reversed', 'failed'],
    ['payment', 'not_made', 'refused'],
  ];
  for (const [kind, state, word] of table)
    it(`${kind} ${state} -> ${word}`, () => expect(ourWord(kind, state)).toBe(word));
});

describe('match: one item per record, each with one outcome', () => {
  const table: Array<[string, Ours[], Theirs[], Array<Partial<ReturnType<typeof match>[number]>>]> = [
    ['the same payment on both sides', [ours()], [theirs()], [{ outcome: 'matched', ref: 'r1', serviceId: '101' }]],
    [
      'found by metadata.ref when we never got the id',
      [ours({ serviceId: null })],
      [theirs()],
      [{ outcome: 'matched', ref: 'r1', serviceId: '101' }],
    ],
    [
      'found by id when the service holds another ref',
      [ours()],
      [theirs({ ref: '' })],
      [{ outcome: 'matched', ref: 'r1' }],
    ],
    [
      'ours, unknown to the service',
      [ours({ state: 'submitted' })],
      [],
      [{ outcome: 'unknown_to_service', ref: 'r1', serviceId: '101', theirs: null }],
    ],
    [
      'an intent whose answer was lost, unknown to the service',
      [ours({ serviceId: null, state: 'intended' })],
      [],
      [{ outcome: 'unknown_to_service', ref: 'r1', serviceId: null }],
    ],
    [
      "the service's, not made here",
      [],
      [theirs({ ref: 'elsewhere', id: '555' })],
      [{ outcome: 'not_ours', ref: null, serviceId: '555', ours: null }],
    ],
    [
      'the service corrects a state',
      [ours({ state: 'completed' })],
      [theirs({ state: 'processed_with_errors' })],
      [{ outcome: 'state_differs', correction: 'failed' }],
    ],
    [
      'the service decided what we still call submitted',
      [ours({ state: 'submitted', toldState: 'submitted' })],
      [theirs()],
      [{ outcome: 'state_differs', correction: 'completed' }],
    ],
    ['another amount', [ours()], [theirs({ amount: '1600' })], [{ outcome: 'detail_differs', differs: ['amount'] }]],
    [
      'another currency and recipient',
      [ours()],
      [theirs({ currency: 'KES', phone: '+254700000000' })],
      [{ outcome: 'detail_differs', differs: ['currency', 'recipient'] }],
    ],
    [
      'a detail and the state differ: detail_differs, the correction still owed',
      [ours()],
      [theirs({ amount: '1', state: 'cancelled' })],
      [{ outcome: 'detail_differs', differs: ['amount'], correction: 'cancelled' }],
    ],
    [
      'a number written without its + is the same number',
      [ours()],
      [theirs({ phone: '256772123456' })],
      [{ outcome: 'matched' }],
    ],
    [
      'a payout: its recipients are not one number',
      [ours({ kind: 'payout', payee: '3 recipients' })],
      [theirs({ phone: '+256700000001' })],
      [{ outcome: 'matched' }],
    ],
    [
      'a payout journalled as a payment of several recipients',
      [ours({ payee: '3 recipients' })],
      [theirs({ phone: '+256700000001' })],
      [{ outcome: 'matched' }],
    ],
    ['held for an approver: not expected at the service', [ours({ state: 'held', serviceId: null })], [], []],
    ['refused by the service: nothing was made', [ours({ state: 'refused', serviceId: null })], [], []],
    ['rejected by our approver before it was sent', [ours({ state: 'rejected', serviceId: null })], [], []],
    ['a purchase: the vending group lists nothing', [ours({ kind: 'purchase' })], [], []],
    [
      'a request matched to its collection request',
      [ours({ kind: 'request', serviceId: '7', state: 'completed' })],
      [theirs({ kind: 'request', id: '7', state: 'successful' })],
      [{ outcome: 'matched', ref: 'r1' }],
    ],
    [
      'a payment and a request may share an id number',
      [ours({ kind: 'request', serviceId: '101', state: 'submitted' })],
      [theirs()],
      [
        { outcome: 'not_ours', serviceId: '101' },
        { outcome: 'unknown_to_service', ref: 'r1' },
      ],
    ],
    [
      'a collection that fulfilled our request is matched to it; another is not ours',
      [ours({ kind: 'request', serviceId: '7', state: 'completed' })],
      [
        theirs({ kind: 'request', id: '7', state: 'successful' }),
        theirs({ kind: 'collection', id: '900', ref: '', state: 'successful', requestId: '7' }),
        theirs({ kind: 'collection', id: '901', ref: '', state: 'successful' }),
      ],
      [
        { outcome: 'matched', serviceId: '7' },
        { outcome: 'matched', ref: 'r1', serviceId: '900' },
        { outcome: 'not_ours', serviceId: '901' },
      ],
    ],
    ['a record listed twice (pages moved) is one item', [ours()], [theirs(), theirs()], [{ outcome: 'matched' }]],
    [
      'a second record carrying our ref with another id is not ours',
      [ours()],
      [theirs(), theirs({ id: '102' })],
      [
        { outcome: 'matched', serviceId: '101' },
        { outcome: 'not_ours', serviceId: '102' },
      ],
    ],
  ];
  for (const [name, mine, service, expected] of table) {
    it(name, () => {
      const items = match(mine, service);
      expect(items).toHaveLength(expected.length);
      items.forEach((item, i) => expect(item).toMatchObject(expected[i]!));
    });
  }

  it('counts every outcome, and differences are what is ours and not as the service holds it', () => {
    const items = match(
      [ours(), ours({ ref: 'r2', serviceId: '102', state: 'submitted' })],
      [theirs(), theirs({ id: '555', ref: '' })],
    );
    const counts = countOutcomes(items);
    expect(counts).toEqual({ matched: 1, unknown_to_service: 1, not_ours: 1, state_differs: 0, detail_differs: 0 });
    expect(hasDifferences(counts)).toBe(true);
    expect(hasDifferences({ ...counts, unknown_to_service: 0 })).toBe(false);
    expect(countLines(counts, OUTCOMES)).toEqual([
      'matched 1',
      'unknown_to_service 1',
      'not_ours 1',
      'state_differs 0',
      'detail_differs 0',
    ]);
  });

  it('expectedAtService: cancelled or expired after it was sent is still at the service', () => {
    expect(expectedAtService(ours({ state: 'cancelled' }))).toBe(true);
    expect(expectedAtService(ours({ state: 'expired', serviceId: null }))).toBe(false);
  });
});

describe('owesTelling: who must hear a correction', () => {
  const table: Array<[string | null, string | undefined, boolean]> = [
    ['completed', 'failed', true], // an outcome told, contradicted
    ['failed', 'completed', true],
    ['submitted', 'completed', true], // told it was on its way; now it is decided
    ['submitted', 'submitted', false],
    [null, 'failed', false], // never told anything
    ['completed', undefined, false], // nothing corrected
    ['intended', 'submitted', false], // nothing final either way
  ];
  for (const [told, now, owed] of table) {
    it(`told ${told}, service ${now}: ${owed ? 'told' : 'not told'}`, () => {
      expect(
        owesTelling({
          outcome: 'state_differs',
          ref: 'r1',
          serviceId: '1',
          ours: ours({ toldState: told }),
          theirs: theirs(),
          ...(now ? { correction: now as Ours['state'] } : {}),
        }),
      ).toBe(owed);
    });
  }
});

describe('parseArgs', () => {
  const today = '2026-11-26';
  const ok: Array<[string[], { from: string; to: string }]> = [
    [['--from', '2026-10-01', '--to', '2026-10-31'], { from: '2026-10-01', to: '2026-10-31' }],
    [['--from=2026-11-25', '--to=2026-11-25'], { from: '2026-11-25', to: '2026-11-25' }],
    [['--to', '2026-11-26', '--from', '2025-11-26'], { from: '2025-11-26', to: '2026-11-26' }],
  ];
  for (const [argv, period] of ok)
    it(`reads ${argv.join(' ')}`, () => expect(parseArgs(argv, today)).toEqual({ ok: true, period }));

  const refused: Array<[string[], RegExp]> = [
    [[], /--from is required/],
    [['--from', '2026-10-01'], /--to is required/],
    [['--from', '2026-02-30', '--to', '2026-03-01'], /--from "2026-02-30" is not a day/],
    [['--from', '2026-10-01', '--to', '1 Nov'], /--to "1 Nov" is not a day/],
    [['--from', '2026-10-02', '--to', '2026-10-01'], /before --from/],
    [['--from', '2026-10-01', '--to', '2026-11-27'], /after today/],
    [['--from', '2024-01-01', '--to', '2026-01-01'], /at most 367/],
    [['--from', '--to', '2026-10-01'], /--from needs a day/],
    [['--from', '2026-10-01', '--from', '2026-10-02', '--to', '2026-10-03'], /given twice/],
    [['--days', '3'], /unknown argument "--days"/],
  ];
  for (const [argv, error] of refused) {
    it(`refuses ${JSON.stringify(argv)}`, () => {
      const parsed = parseArgs(argv, today);
      expect(parsed.ok).toBe(false);
      if (!parsed.ok) expect(parsed.error).toMatch(error);
    });
  }
});

describe('the words of a correction', () => {
  const params = { ref: '101', amount: '5000', currency: 'UGX', phone: '+256772000004' };
  it('names what the service holds and what the person was told, in our words', () => {
    expect(notifyText('en', 'notify.correction.payment', { ...params, state: 'failed', told: 'completed' })).toMatch(
      /payment 101 of 5,000 UGX to \+256772000004 is failed at the service, not done as we told you/,
    );
    expect(notifyText('en', 'notify.correction.payment', { ...params, state: 'completed', told: 'refused' })).toMatch(
      /is done at the service, not not made/,
    );
    expect(notifyText('en', 'notify.correction.request', { ...params, state: 'completed', told: 'submitted' })).toMatch(
      /is paid at the service, not still open/,
    );
    expect(notifyText('sw', 'notify.correction.payment', { ...params, state: 'failed', told: 'completed' })).toMatch(
      /imeshindwa kwenye huduma, si imekamilika/,
    );
  });

  it('fits the USSD inbox in every language', () => {
    for (const lang of ['en', 'sw', 'fr'] as const) {
      for (const kind of ['payment', 'request']) {
        const text = notifyText(
          lang,
          `notify.correction.${kind}`,
          { ...params, ref: '123456789', state: 'failed', told: 'completed' },
          { forDial: true },
        );
        expect(text.length, text).toBeLessThanOrEqual(120);
      }
    }
  });
});
