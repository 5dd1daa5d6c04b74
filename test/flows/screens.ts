/**
 * Checks of the words every flow shows: every language holds the same keys, and
 * every screen the model reaches fits a USSD screen (182 characters with its numbered choices).
 */
import { expect } from 'vitest';
import { LANGS, type FlowModule } from '../../flows/types.js';
import { createCatalogue, currentView } from '../../src/conversation/flow/render.js';
import type { Walk } from './coverage.js';

/** Characters on one USSD screen (GSM-7). */
const USSD_SCREEN = 182;

/** Every screen of the walk, rendered in every language with numbered choices, fits a USSD screen. */
export function expectScreensFit(module: FlowModule, walk: Walk): void {
  const catalogue = createCatalogue([module]);
  let screens = 0;
  for (const { state } of walk.paths) {
    const view = currentView(state);
    if (!view) continue;
    for (const lang of LANGS) {
      const prompt = catalogue.renderView(view, lang);
      const screen = [prompt.text, ...(prompt.choices ?? []).map((c, i) => `${i + 1}. ${c.label}`)].join('\n');
      expect(screen.length, screen).toBeLessThanOrEqual(USSD_SCREEN);
      expect(screen, screen).not.toMatch(/\{\w+\}/);
      screens++;
    }
  }
  expect(screens).toBeGreaterThan(0);
}

/** Every language holds the same keys as English, and the flow's own keys carry its prefix. */
export function expectCatalogueComplete(module: FlowModule): void {
  for (const lang of LANGS)
    expect(Object.keys(module.messages[lang] ?? {}).sort(), lang).toEqual(Object.keys(module.messages.en).sort());
  const own = Object.keys(module.messages.en).filter((key) => !/^(input|failure)\./.test(key));
  expect(own.length).toBeGreaterThan(0);
  for (const key of own) expect(key.startsWith(`${module.id}.`), key).toBe(true);
}
