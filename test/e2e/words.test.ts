/**
 * Issue #47's words, as a tester reads them on the phone: from Nigerian, Ugandan and Kenyan numbers, in every
 * language the product has, through the whole product (Africa's Talking, the embedded sandbox's names).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningApp } from '../../src/app.js';
import { LANGS, type Lang } from '../../flows/types.js';
import { AtSession, startProduct } from './helpers.js';

let app: RunningApp;
beforeAll(async () => {
  app = await startProduct();
});
afterAll(async () => {
  await app.stop();
});

const PREFIX: Record<'NG' | 'UG' | 'KE', string> = { NG: '+2348031405', UG: '+2567721236', KE: '+2547123458' };
let made = 0;

/** A number of `country` no other test dials, its language chosen on the menu (English is the default). */
async function caller(country: keyof typeof PREFIX, lang: Lang): Promise<string> {
  const phone = `${PREFIX[country]}${String(made++).padStart(country === 'NG' ? 3 : 2, '0')}`;
  if (lang === 'en') return phone;
  const setup = new AtSession(app.url, phone);
  const menu = await setup.dial();
  await setup.answer(/(\d+)\. Language/.exec(menu)?.[1] ?? '');
  await setup.answer(String(LANGS.indexOf(lang) + 1));
  return phone;
}

/** The screens after the dial of `answers` typed from `phone`. */
async function walk(phone: string, answers: string[]): Promise<string[]> {
  const session = new AtSession(app.url, phone);
  await session.dial();
  for (const answer of answers) await session.answer(answer);
  return session.screens.slice(1);
}

describe("issue 47's words on the phone, in every language", () => {
  it.each(LANGS)(
    '%s: vending names read once ("a bundle on MTN", "<pin>: how many?"), no doubled pin words',
    async (lang) => {
      const [network, bundles] = await walk(await caller('NG', lang), ['4', '1']);
      expect(network).toMatch(/\n1\. MTN\n/);
      expect(bundles).toMatch(
        {
          en: /^CON Choose a bundle on MTN:/,
          sw: /^CON Chagua kifurushi cha MTN:/,
          fr: /^CON Choisissez un forfait MTN :/,
        }[lang],
      );
      expect(bundles).not.toMatch(/\ba MTN\b/);
      const [, waec, count] = await walk(await caller('NG', lang), ['5', '2', '1']);
      expect(waec).toMatch(/\n1\. WAEC result checker PIN [\d,  ]+ NGN\n/);
      expect(count).toMatch(
        { en: /^CON WAEC result checker PIN: how many\?/, sw: /: unataka ngapi\?/, fr: / : combien \?/ }[lang],
      );
      expect(count).not.toMatch(/PIN pins|PIN PIN|pins pins/i);
      for (const screen of [network, bundles, waec, count]) expect(screen!.length).toBeLessThanOrEqual(182);
    },
  );

  it.each(LANGS)(
    "%s: a Kenyan caller's numbers, examples and currency are Kenyan; a Ugandan payee is abroad",
    async (lang) => {
      const kenyan = await caller('KE', lang);
      // Pay someone, mobile money, a number that cannot be read: the example is Kenyan.
      const [, , refused] = await walk(kenyan, ['1', '1', '0712']);
      expect(refused).toContain('0712123456');
      expect(refused).toContain('+254712123456');
      // A Ugandan number typed with its code, names, an amount: KES (the caller's one currency), said abroad.
      const screens = await walk(await caller('KE', lang), ['1', '1', '+256772123456', 'Grace', 'Otieno', '700']);
      const summary = screens.at(-1)!;
      const abroad = { en: 'This number is abroad (Uganda).', sw: 'Nje ya nchi: Uganda.', fr: 'Étranger : Ouganda.' }[
        lang
      ];
      expect(summary.startsWith(`CON ${abroad}\n`), summary).toBe(true);
      expect(summary).toMatch(/700 KES/);
      expect(summary).not.toMatch(/UGX|BXC/);
      expect(summary.length).toBeLessThanOrEqual(182);
    },
  );

  it.each(LANGS)('%s: "Check a payment received" opens as the menu names it, never "a collection"', async (lang) => {
    const title = {
      en: 'CON Check a payment received:\n',
      sw: 'CON Kagua malipo uliyopokea:\n',
      // é is in the GSM 7-bit alphabet and kept; ç is not (only Ç is): the phone shows c.
      fr: 'CON Vérifier un paiement recu :\n',
    }[lang];
    for (const country of ['UG', 'KE'] as const) {
      const [check] = await walk(await caller(country, lang), ['3']);
      expect(check?.startsWith(title), check).toBe(true);
      expect(check).not.toMatch(/collection/i);
    }
  });
});
