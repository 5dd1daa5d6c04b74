/**
 * README.md's five-minute tour, walked on the demo product (startApp with no environment: the embedded
 * sandbox, the memory store) through the simulator's own endpoint as the simulator posts to it: the screens
 * the tour quotes (in backticks or double quotes, e.g. `Sent: 5,000 UGX to Sarah Nakato. Ref 1. …`) are read
 * from README.md itself and each must be shown by the product on the way. A tour sentence quoting a screen
 * the product no longer shows fails here, not in a newcomer's hands.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_PHONE } from '../adapters/ussd/simulator.js';
import { startApp, type RunningApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { until } from './until.js';
import { productDatabase } from './journal/server-database.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const tour = readme.slice(
  readme.indexOf('## A five-minute tour'),
  readme.indexOf('\n## ', readme.indexOf('## A five')),
);

/** What the tour quotes as a screen: a quoted sentence (ends in `.`, `?` or `.)` with a space inside). */
function quotedScreens(text: string): string[] {
  const quoted = [...text.matchAll(/`([^`]+)`|"([^"]+)"/g)].map((m) => (m[1] ?? m[2])!.trim());
  return quoted.filter((q) => / /.test(q) && /[.?]$/.test(q)).map((q) => q.replace(/\s+/g, ' '));
}

let running: RunningApp;
beforeAll(async () => {
  running = await startApp(loadConfig({ ...(await productDatabase()), PORT: '0', LOG_LEVEL: 'silent' }));
});
afterAll(async () => {
  await running?.stop();
});

/** Every screen the walk was shown, whitespace folded (a screen's line breaks are the tour's spaces). */
const shown: string[] = [];
let sessions = 0;

/**
 * One dial from the simulator: a fresh sessionId, then each answer appended to `text` as Africa's Talking does.
 * An answer may be a function of the screen shown (undefined: skip it). Returns the screens shown.
 */
async function dial(answers: Array<string | ((screen: string) => string | undefined)>, phone = DEMO_PHONE) {
  const sessionId = `TOUR${++sessions}`;
  const given: string[] = [];
  const screens: string[] = [];
  const post = async () => {
    const body = new URLSearchParams({
      sessionId,
      serviceCode: '*384*123#',
      phoneNumber: phone,
      networkCode: '99999',
      text: given.join('*'),
    });
    const res = await fetch(`${running.url}/ussd/africastalking`, { method: 'POST', body });
    const reply = await res.text();
    expect(res.status, reply).toBe(200);
    const screen = reply.slice(4).replace(/\s+/g, ' ');
    screens.push(screen);
    shown.push(screen);
    return reply.startsWith('END ');
  };
  let ended = await post();
  for (const answer of answers) {
    if (ended) break;
    const text = typeof answer === 'string' ? answer : answer(screens.at(-1)!);
    if (text === undefined) continue;
    given.push(text);
    ended = await post();
  }
  return screens;
}

/** Waits (a condition, not a time) until the journal holds the service's id `id` in a final state. */
async function settled(id: string): Promise<void> {
  await until(
    `payment ${id} final in the journal`,
    async () => {
      const res = await fetch(`${running.url}/ops/payments.json?id=${id}`);
      const { items } = (await res.json()) as { items: Array<{ state: string }> };
      return items[0] !== undefined && ['completed', 'failed'].includes(items[0].state);
    },
    { timeoutMs: 30_000, everyMs: 50 },
  );
}

describe("README's five-minute tour", () => {
  it('quotes screens: the walk below has something to check', () => {
    expect(quotedScreens(tour).length).toBeGreaterThanOrEqual(3);
  });

  it('shows every screen the tour quotes, walked as the tour says', async () => {
    // 2-3: the first payment to Sarah.
    const first = await dial(['1', '1', '0772000001', 'Sarah', 'Nakato', '5000', '1', '1', '1234']);
    expect(first.at(-1)).toMatch(/^Sent: 5,000 UGX to Sarah Nakato\./);
    await settled('1');
    // 3-4: pay again, Sarah listed first; each screen answered as the tour says, whichever screens the
    // product asks (the currency only where there is a choice, a second payment of the same amount confirmed).
    const rules: Array<[RegExp, string]> = [
      [/Pay whom\?/, '1'],
      [/Enter the amount/, '5000'],
      [/Choose the currency/, '1'],
      [/second payment\?/, '1'],
      [/^Send .*\? 1\. Confirm/, '1'],
      [/Enter your PIN/, '1234'],
      [/What would you like to do\?/, '1'],
    ];
    const byScreen = (screen: string) => rules.find(([when]) => when.test(screen))?.[1];
    const again = await dial(Array.from({ length: 12 }, () => byScreen));
    expect(again[1]).toMatch(/1\. Sarah Nakato/);
    expect(again.at(-1)).toMatch(/^Sent: 5,000 UGX to Sarah Nakato\./);
    await settled('2');
    await dial([]);
    // 7: drop mid-payment (no END), then dial again.
    await dial(['1', '1', '3000']);
    await dial([]);
    // 5: 0772000002 is refused before the PIN; 0772000004's payment fails and the next dial says so.
    const other = '+256772123488';
    const toNew = (phone: string) => (screen: string) =>
      (
        [
          [/What would you like to do\?|What do you want to send\?|Pay whom\?/, '1'],
          [/Enter the phone number/, phone],
          [/first name/, 'Ann'],
          [/last name/, 'Ok'],
          [/Enter the amount/, '3000'],
          [/Choose the currency/, '1'],
          [/The network knows this number as/, '1'],
          [/^Send .*\? 1\. Confirm/, '1'],
          [/Enter your PIN/, '1234'],
        ] as Array<[RegExp, string]>
      ).find(([when]) => when.test(screen))?.[1];
    const unregistered = await dial(
      Array.from({ length: 12 }, () => toNew('0772000002')),
      other,
    );
    expect(unregistered.at(-1)).toMatch(/is not registered for mobile money, so it cannot be paid/);
    expect(unregistered.join('\n')).not.toMatch(/PIN/);
    const failing = await dial(
      Array.from({ length: 12 }, () => toNew('0772000004')),
      '+256772123489',
    );
    expect(failing.at(-1)).toMatch(/^Sent: 3,000 UGX/);
    await settled('3');
    expect((await dial([], '+256772123489'))[0]).toMatch(/Failed: 3,000 UGX to \+256772000004\. Ref MC-[A-Z0-9]+\./);
    const all = shown.join('\n');
    for (const quote of quotedScreens(tour)) expect(all, `README quotes "${quote}"`).toContain(quote);
  });
});
