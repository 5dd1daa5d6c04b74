import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { isTimeZone, localTime, setShownTimeZone } from '../src/local-time.js';
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

  it('refuses a zone it does not know, at the setting', () => {
    expect(isTimeZone('Africa/Kampala')).toBe(true);
    expect(isTimeZone('Mars/Olympus')).toBe(false);
    expect(() => setShownTimeZone('Mars/Olympus')).toThrow(/unknown time zone/);
    expect(loadConfig({}).TZ).toBe('UTC');
    expect(loadConfig({ TZ: 'Africa/Kampala' }).TZ).toBe('Africa/Kampala');
    expect(() => loadConfig({ TZ: 'Mars/Olympus' })).toThrow(/TZ/);
  });
});
