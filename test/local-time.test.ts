import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { dayBounds, dayIn, isTimeZone, localTime, setShownTimeZone } from '../src/local-time.js';
import { when } from '../src/ops/html.js';

describe('local times with their zone', () => {
  afterEach(() => setShownTimeZone('UTC'));

  it('shows UTC by default, with its name', () => {
    expect(localTime('2026-12-02T11:05:00Z')).toBe('2026-12-02 11:05 UTC');
    expect(when(new Date('2026-12-02T11:05:09Z'))).toBe('2026-12-02 11:05:09 UTC');
  });

  it("shows the TZ setting's zone with the name East and West Africa read", () => {
    setShownTimeZone('Africa/Nairobi');
    expect(localTime('2026-12-02T11:05:00Z')).toBe('2026-12-02 14:05 EAT');
    expect(when('2026-12-02T23:30:00Z')).toBe('2026-12-03 02:30:00 EAT');
    expect(localTime('2026-12-02T11:05:00Z', { zone: 'Africa/Lagos' })).toBe('2026-12-02 12:05 WAT');
    // The service's timestamps without an offset are UTC.
    expect(localTime('2026-12-02 11:05:00')).toBe('2026-12-02 14:05 EAT');
    expect(localTime('not a time')).toBe('not a time');
    expect(when(null)).toBe('');
  });

  it("gives a day of the zone as the instants it begins and ends, and the zone's date of an instant", () => {
    expect(dayBounds('2026-12-02', 'UTC')).toEqual({
      from: new Date('2026-12-02T00:00:00Z'),
      to: new Date('2026-12-03T00:00:00Z'),
    });
    expect(dayBounds('2026-12-02', 'Africa/Nairobi')).toEqual({
      from: new Date('2026-12-01T21:00:00Z'),
      to: new Date('2026-12-02T21:00:00Z'),
    });
    expect(dayBounds('2026-12-31', 'Africa/Lagos').to).toEqual(new Date('2026-12-31T23:00:00Z'));
    // A day of 23 hours where the clocks go forward.
    expect(dayBounds('2026-03-29', 'Europe/London')).toEqual({
      from: new Date('2026-03-29T00:00:00Z'),
      to: new Date('2026-03-29T23:00:00Z'),
    });
    expect(dayIn(new Date('2026-12-01T21:30:00Z'), 'Africa/Nairobi')).toBe('2026-12-02');
    expect(dayIn(new Date('2026-12-01T21:30:00Z'), 'UTC')).toBe('2026-12-01');
  });

  it('refuses a zone it does not know, at the setting', () => {
    expect(isTimeZone('Africa/Kampala')).toBe(true);
    expect(isTimeZone('Mars/Olympus')).toBe(false);
    expect(() => setShownTimeZone('Mars/Olympus')).toThrow(/unknown time zone/);
    expect(loadConfig({}).TZ).toBe('UTC');
    expect(loadConfig({ TZ: 'Africa/Kampala' }).TZ).toBe('Africa/Kampala');
    expect(() => loadConfig({ TZ: 'Mars/Olympus' })).toThrow(/TZ/);
  });
});
