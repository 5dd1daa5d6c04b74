import { describe, expect, it } from 'vitest';
import { setup } from 'xstate';
import { flows } from '../../flows/index.js';
import type { FlowModule } from '../../flows/types.js';
import { createCatalogue, render, renderView } from '../../src/conversation/flow/render.js';
import { missingMessages, walkFlow } from '../flows/coverage.js';

const testFlow: FlowModule = {
  id: 'pay',
  machine: flows.menu!.machine,
  messages: {
    en: { 'pay.hello': 'Hello {name}, {count} left', 'pay.onlyEn': 'English only' },
    sw: { 'pay.hello': 'Habari {name}, {count} zimebaki' },
  },
};

describe('catalogue', () => {
  const catalogue = createCatalogue([testFlow]);

  it('fills placeholders and leaves unknown ones visible', () => {
    expect(catalogue.render({ key: 'pay.hello', params: { name: 'Amina', count: 2 } }, 'sw')).toBe(
      'Habari Amina, 2 zimebaki',
    );
    expect(catalogue.render({ key: 'pay.hello', params: { name: 'Amina' } }, 'en')).toBe('Hello Amina, {count} left');
  });

  it('falls back to English, then to the key', () => {
    expect(catalogue.render({ key: 'pay.onlyEn' }, 'sw')).toBe('English only');
    expect(catalogue.render({ key: 'pay.nowhere' }, 'sw')).toBe('pay.nowhere');
  });

  it('renders a view: error above text, literal and catalogue labels, input and final', () => {
    const prompt = catalogue.renderView(
      {
        text: { key: 'pay.hello', params: { name: 'A', count: 1 } },
        error: { key: 'common.pickOne' },
        choices: [
          { id: 'x', text: { key: 'common.yes' } },
          { id: 'y', label: 'MTN 1GB' },
        ],
        input: 'amount',
      },
      'en',
    );
    expect(prompt).toEqual({
      text: 'Please pick one of the options.\nHello A, 1 left',
      choices: [
        { id: 'x', label: 'Yes' },
        { id: 'y', label: 'MTN 1GB' },
      ],
      input: 'amount',
      refused: true,
      final: false,
    });
    // The language rides along (adapters' own words: USSD `0 Rudi`, buttons); English is the default, left out.
    expect(renderView({ text: { key: 'common.cancelled' }, final: true }, 'sw')).toEqual({
      text: 'Imeghairiwa. Hakuna kilichotumwa.',
      lang: 'sw',
      final: true,
    });
  });

  it('the default catalogue holds the common and menu words', () => {
    expect(render({ key: 'menu.flow.pay' }, 'sw')).toBe('Mlipe mtu');
    expect(render({ key: 'common.expired' }, 'en')).toMatch(/timed out/);
  });

  it('common messages exist in both languages', () => {
    const { messages } = createCatalogue([]);
    expect(Object.keys(messages.sw).sort()).toEqual(Object.keys(messages.en).sort());
  });

  it('the walker reports states it cannot reach and only the keys of screens it reached', () => {
    const machine = setup({}).createMachine({
      id: 'walked',
      initial: 'start',
      states: {
        start: {
          meta: { view: () => ({ text: { key: 'pay.hello' }, choices: [{ id: 'go', text: { key: 'common.yes' } }] }) },
          on: { CHOSEN: 'end' },
        },
        end: { type: 'final', meta: { view: () => ({ text: { key: 'pay.onlyEn' } }) } },
        island: { meta: { view: () => ({ text: { key: 'pay.unreached' } }) } },
      },
    });
    const walk = walkFlow({ ...testFlow, machine }, { print: false });
    expect(walk.line).toBe('pay: states visited 2/3');
    expect(walk.missing).toEqual(['island']);
    expect(walk.keys).toEqual(['common.yes', 'pay.hello', 'pay.onlyEn']);
    expect(missingMessages(testFlow, walk.keys)).toEqual(['sw:pay.onlyEn']);
  });

  // Every registered flow (menu, and each flow the other engineers add) walked with the sample services:
  // every catalogue key a reached screen uses exists in English and Swahili.
  for (const module of Object.values(flows)) {
    for (const requirePin of [false, true]) {
      it(`${module!.id} (requirePin ${requirePin}): every key its views use exists in en and sw`, () => {
        const walk = walkFlow(module!, {
          input: { requirePin, channel: requirePin ? 'ussd' : 'telegram' },
          print: false,
        });
        expect(walk.keys.length).toBeGreaterThan(0);
        expect(missingMessages(module!, walk.keys)).toEqual([]);
      });
    }
  }
});
