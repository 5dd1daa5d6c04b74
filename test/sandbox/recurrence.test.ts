/** The times of a recurring series: steps, the month's last day, weekday and month filters, the bounds. */
import { describe, expect, it } from 'vitest';
import { FieldErrors } from '../../src/sandbox/errors.js';
import { MAX_OCCURRENCES, occurrences, readRecurrence } from '../../src/sandbox/recurrence.js';

const NOW = Date.UTC(2026, 0, 1);
const iso = (ms: number) => new Date(ms).toISOString().slice(0, 16);
const read = (settings: Record<string, unknown>) => {
  const errors = new FieldErrors();
  const r = readRecurrence(settings, NOW, errors);
  errors.throwIfAny();
  return r!;
};

describe('recurrence', () => {
  it('steps monthly on the start day, or the last day of a shorter month', () => {
    const r = read({ start_date: '31/01/2026 09:00:00', end_date: '30/04/2026 23:00:00', frequency: 'monthly' });
    expect([...occurrences(r)].map(iso)).toEqual([
      '2026-01-31T09:00',
      '2026-02-28T09:00',
      '2026-03-31T09:00',
      '2026-04-30T09:00',
    ]);
  });

  it('keeps only the weekdays and months given, daily by default', () => {
    const r = read({
      start_date: '01/01/2026 08:00:00',
      end_date: '31/03/2026 08:00:00',
      weekdays: 'Monday, friday',
      months: 'march',
    });
    const times = [...occurrences(r)];
    expect(times.map(iso).slice(0, 3)).toEqual(['2026-03-02T08:00', '2026-03-06T08:00', '2026-03-09T08:00']);
    expect(times.every((t) => [1, 5].includes(new Date(t).getUTCDay()) && new Date(t).getUTCMonth() === 2)).toBe(true);
    expect(times).toHaveLength(9);
  });

  it('ends at end_date inclusive, and at MAX_OCCURRENCES', () => {
    expect([
      ...occurrences(read({ start_date: '01/01/2026 10:00:00', end_date: '01/01/2026 12:00:00', frequency: 'hourly' })),
    ]).toHaveLength(3);
    expect([
      ...occurrences(
        read({ start_date: '01/01/2026 10:00:00', end_date: '01/01/2027 10:00:00', frequency: 'minutely' }),
      ),
    ]).toHaveLength(MAX_OCCURRENCES);
  });

  it('refuses settings the contract does not allow, each under its key', () => {
    const errors = new FieldErrors();
    expect(
      readRecurrence(
        {
          start_date: '01/01/2025 00:00:00',
          end_date: 'soon',
          frequency: 'fortnightly',
          weekdays: 'funday',
          months: 7,
        },
        NOW,
        errors,
      ),
    ).toBeUndefined();
    const thrown = (() => {
      try {
        errors.throwIfAny();
      } catch (e) {
        return e as { body: Record<string, string[]> };
      }
    })()!;
    expect(Object.keys(thrown.body).sort()).toEqual(
      ['end_date', 'frequency', 'months', 'start_date', 'weekdays'].map((k) => `subscription_settings.${k}`),
    );
  });
});
