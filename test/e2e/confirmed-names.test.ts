/**
 * Only names the network confirmed are kept (issue #47): a name the network refused is never put on a summary
 * or under "Pay whom?" unasked. USSD through the whole product and the embedded sandbox.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningApp } from '../../src/app.js';
import { AtSession, startProduct } from './helpers.js';

let app: RunningApp;
beforeAll(async () => {
  app = await startProduct();
});
afterAll(async () => {
  await app.stop();
});

/** Answers `answers` after the dial's menu and gives the last screen. */
async function dial(phone: string, answers: string[]): Promise<{ last: string; session: AtSession }> {
  const session = new AtSession(app.url, phone);
  let last = await session.dial();
  for (const answer of answers) last = await session.answer(answer);
  return { last, session };
}

/** From the amount on: the currency when asked (UGX, the first). */
async function amount(session: AtSession, value: string): Promise<string> {
  const next = await session.answer(value);
  return /currency/i.test(next) ? session.answer('1') : next;
}

describe('names the network refused are not kept', () => {
  it('a name refused and stopped is asked again: the summary never names it', async () => {
    const me = '+256772123460';
    const first = await dial(me, ['1', '1', '0752000003', 'Otim', 'Peter']);
    expect(await amount(first.session, '5000')).toMatch(/knows this number as Otim Geoffrey Okwir, not Otim Peter/);
    // Stop: the last choice of the mismatch screen.
    const stop = first.session.screens.at(-1)!.match(/(\d+)\. Stop/)![1]!;
    expect(await first.session.answer(stop)).toMatch(/cancelled/i);

    const again = await dial(me, ['1']);
    // Never paid: nobody is listed under "Pay whom?".
    expect(again.last).not.toMatch(/Otim Peter/);
    const asked = await again.session.answer('1');
    const named = await again.session.answer('0752000003');
    expect(asked).toMatch(/phone number/i);
    // The names are asked again, offering the network's own.
    expect(named).toMatch(/The network knows \+256752000003 as Otim Geoffrey Okwir/);
    expect(named).not.toMatch(/Otim Peter/);
    // The network's own name chosen: paid and remembered under it.
    await again.session.answer('1');
    const summary = await amount(again.session, '5000');
    expect(summary).toMatch(/to Otim Geoffrey Okwir \(\+256752000003/);
    await again.session.answer('1');
    expect(await again.session.answer('1234')).toMatch(/^END Sent: 5,000 \w+ to Otim Geoffrey Okwir/);
    const third = await dial(me, ['1']);
    expect(third.last).toMatch(/Pay whom\?\n1\. Otim Geoffrey Okwir\n/);
    for (const screen of [...first.session.screens, ...again.session.screens, ...third.session.screens])
      expect(screen.replace(/^(CON|END) /, '').length).toBeLessThanOrEqual(182);
  });

  it('a name the network refused and paid "anyway" is not listed under Pay whom?', async () => {
    const me = '+256772123461';
    // 0772000004 is Brian Mugisha's: John Okello is refused; Stop, then again with other names and Stop.
    const first = await dial(me, ['1', '1', '0772000004', 'John', 'Okello']);
    expect(await amount(first.session, '3000')).toMatch(/as Brian Mugisha, not John Okello/);
    await first.session.answer(first.session.screens.at(-1)!.match(/(\d+)\. Stop/)![1]!);
    const again = await dial(me, ['1', '1', '0772000004']);
    expect(again.last).toMatch(/The network knows \+256772000004 as Brian Mugisha/);
    expect(again.last).not.toMatch(/John Okello/);
  });
});
