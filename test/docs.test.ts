/**
 * The documentation generated from code is what the code says: docs/configuration.md is what
 * `npm run docs:config` writes from src/config.ts's schema (run it after changing a setting).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CONFIG_DOC, renderConfigDocs, settingsOf } from '../scripts/config-docs.js';

describe('docs/configuration.md', () => {
  it('is what npm run docs:config writes from src/config.ts', () => {
    expect(readFileSync(CONFIG_DOC, 'utf8')).toBe(renderConfigDocs());
  });

  it('names every setting of the schema, each with what it does', () => {
    const source = readFileSync(new URL('../src/config.ts', import.meta.url), 'utf8');
    const rows = settingsOf(source);
    const names = rows.flatMap((r) => r.names);
    expect(names).toContain('PORT');
    expect(names).toContain('MOMO_BASE_URL');
    expect(new Set(names).size).toBe(names.length);
    for (const row of rows) expect(row.doc, row.names.join(', ')).not.toBe('');
    const doc = readFileSync(CONFIG_DOC, 'utf8');
    for (const name of names) expect(doc).toContain(`\`${name}\``);
  });

  it('reads a new setting and its comment, and joins an uncommented one to the row before', () => {
    const rows = settingsOf(
      `const envSchema = z.object({\n  /** One. */\n  A: x,\n  B: x,\n  /** Two\n   * lines. */\n  C: x,\n});`,
    );
    expect(rows).toEqual([
      { names: ['A', 'B'], doc: 'One.' },
      { names: ['C'], doc: 'Two lines.' },
    ]);
  });
});

describe('ARCHITECTURE.md', () => {
  it('shows the flow kit in its "Add a flow" recipe as test/flows/recipe.test.ts, which runs', () => {
    const doc = readFileSync(new URL('../ARCHITECTURE.md', import.meta.url), 'utf8');
    const recipe = doc.slice(doc.indexOf('### Add a flow'), doc.indexOf('### Add a USSD gateway'));
    const block = /\n {3}```ts\n([\s\S]*?)\n {3}```\n/.exec(recipe)?.[1];
    expect(block, 'a ts code block in the recipe').toBeDefined();
    const shown = block!.replace(/^ {3}/gm, '');
    const file = readFileSync(new URL('./flows/recipe.test.ts', import.meta.url), 'utf8');
    expect(`${shown}\n`).toBe(file);
    expect(shown).toContain('flowTest(');
  });
});
