/**
 * A test run leaves the tracked docs/*.png alone: every page test takes its screenshot's path from
 * screenshotPath (test/screenshots.ts), which names docs/ only when UPDATE_SCREENSHOTS asks to refresh them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DOCS, SCREENSHOTS_TMP, screenshotPath } from './screenshots.js';

/** Every test file under test/. */
function testFiles(dir = import.meta.dirname): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

describe('screenshots', () => {
  it('go to a temp dir, and to docs/ only when UPDATE_SCREENSHOTS is set', () => {
    expect(screenshotPath('people.png', {})).toBe(join(SCREENSHOTS_TMP, 'people.png'));
    expect(screenshotPath('people.png', { UPDATE_SCREENSHOTS: '' })).toBe(join(SCREENSHOTS_TMP, 'people.png'));
    expect(screenshotPath('people.png', { UPDATE_SCREENSHOTS: '1' })).toBe(join(DOCS, 'people.png'));
    expect(relative(DOCS, SCREENSHOTS_TMP).startsWith('..')).toBe(true);
  });

  it('are written by every page test at a path screenshotPath gives', () => {
    const calls = testFiles().flatMap((file) => {
      const text = readFileSync(file, 'utf8');
      return [...text.matchAll(/\.screenshot\(\{([^}]*)/g)].map((call) => ({
        file: relative(import.meta.dirname, file),
        path: /path:\s*screenshotPath\(/.test(call[1]!),
      }));
    });
    // The operator page, the money pages, the people page and the channel preview.
    expect(calls.length).toBeGreaterThanOrEqual(7);
    expect(calls.filter((call) => !call.path)).toEqual([]);
  });
});
