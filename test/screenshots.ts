/**
 * Where the page tests write their screenshots. The docs show them (docs/*.png, tracked): a run rewrites
 * those only when `UPDATE_SCREENSHOTS` is set (`UPDATE_SCREENSHOTS=1 npx vitest run <file>`, then look at
 * the images before committing them); otherwise they go to a temporary directory, so a test run leaves the
 * working tree as it found it.
 */
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The docs' images. */
export const DOCS = join(import.meta.dirname, '..', 'docs');

/** Where screenshots go when the docs' are not asked for. */
export const SCREENSHOTS_TMP = join(tmpdir(), 'momo-chat-screenshots');

/** The path to write the screenshot `name` (`people.png`) to: docs/ with UPDATE_SCREENSHOTS, else a temp dir. */
export function screenshotPath(name: string, env: NodeJS.ProcessEnv = process.env): string {
  const dir = env.UPDATE_SCREENSHOTS ? DOCS : SCREENSHOTS_TMP;
  mkdirSync(dir, { recursive: true });
  return join(dir, name);
}
