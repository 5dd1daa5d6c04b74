/**
 * Checks of the words every flow shows: every language holds the same keys, and
 * every screen the model reaches fits a USSD screen whole, as the phone counts it: its text, numbered choices
 * and `0 Back 00 Home` line (in the screen's language) after the USSD renderer's plain replacements, in 182
 * GSM-7 septets (an accent of GSM-7's basic set one, an extension character two) or, once a character is
 * outside GSM-7, in 80 UCS-2 characters.
 */
import { expect } from 'vitest';
import { LANGS, type FlowModule } from '../../flows/types.js';
import { catalogue as allWords, createCatalogue, currentView } from '../../src/conversation/flow/render.js';
import { GSM7_LIMIT, UCS2_LIMIT, isGsm7, screenLength, toPlain } from '../../adapters/ussd/gsm7.js';
import type { Walk } from './coverage.js';

/** The size of `screen` on a phone and the limit it must keep. */
export function ussdSize(screen: string): { size: number; limit: number } {
  const plain = toPlain(screen);
  const gsm7 = isGsm7(plain);
  return { size: screenLength(plain, gsm7), limit: gsm7 ? GSM7_LIMIT : UCS2_LIMIT };
}

/** Every screen of the walk, rendered in every language with numbered choices, fits a USSD screen. */
export function expectScreensFit(module: FlowModule, walk: Walk): void {
  const catalogue = createCatalogue([module]);
  let screens = 0;
  for (const { state } of walk.paths) {
    const view = currentView(state);
    if (!view) continue;
    for (const lang of LANGS) {
      const prompt = catalogue.renderView(view, lang);
      const nav = `0 ${allWords.render({ key: 'common.back' }, lang)} 00 ${allWords.render({ key: 'common.home' }, lang)}`;
      const screen = [
        prompt.text,
        ...(prompt.choices ?? []).map((c, i) => `${i + 1}. ${c.label}`),
        ...(prompt.final || prompt.top ? [] : [nav]),
      ].join('\n');
      const { size, limit } = ussdSize(screen);
      expect(size, screen).toBeLessThanOrEqual(limit);
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
