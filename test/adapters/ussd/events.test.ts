/**
 * Where a USSD session died (adapters/ussd/events.ts), through the whole product over HTTP: Africa's Talking's
 * end-of-session report (`POST /ussd/africastalking/events`) and Hubtel's release mark the step the flow waited
 * at as abandoned in the funnel (read at /ops/funnel.json, open in the demo), once per run; a report about
 * another session, a finished one or a malformed one counts nothing, a malformed one gets a 400 with a reason,
 * and the answers in a report (the PIN among them) are never logged.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type RunningApp } from '../../../src/app.js';
import { loadConfig } from '../../../src/config.js';
import { createLogger } from '../../../src/log.js';
import type { FunnelReport, StepReport } from '../../../src/ops/funnel.js';
import { AtSession } from '../../e2e/helpers.js';
import { productDatabase } from '../../journal/server-database.js';

const lines: string[] = [];
let app: RunningApp;
beforeAll(async () => {
  const logger = createLogger(
    'info',
    new Writable({ write: (chunk, _e, done) => (lines.push(String(chunk)), done()) }),
  );
  app = await startApp(loadConfig({ ...(await productDatabase()), PORT: '0', LOG_LEVEL: 'info' }), { logger });
});
afterAll(async () => {
  await app.stop();
});

let numbers = 0;
const nextPhone = () => `+2567003${String(++numbers).padStart(5, '0')}`;

/** Dial, pay, mobile money, a new number and its names: the flow waits at the amount. */
async function toAmount(phone: string): Promise<AtSession> {
  const at = new AtSession(app.url, phone);
  await at.dial();
  for (const answer of ['1', '1', '0772000001', 'Sarah', 'Nakato']) await at.answer(answer);
  expect(at.screens.at(-1)).toMatch(/amount/i);
  return at;
}

function report(fields: Record<string, string>) {
  return fetch(`${app.url}/ussd/africastalking/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields),
  });
}

/** A report as Africa's Talking sends it. */
const atReport = (at: AtSession, changes: Record<string, string> = {}) => ({
  date: '2026-11-20 10:11:12',
  sessionId: at.sessionId,
  serviceCode: '*384*123#',
  networkCode: '63902',
  phoneNumber: at.phoneNumber,
  status: 'Incomplete',
  cost: 'UGX 0.00',
  durationInMillis: '41000',
  hopsCount: '6',
  input: '1*1*0772000001*Sarah*Nakato',
  lastAppResponse: 'CON Enter the amount:',
  errorMessage: '',
  ...changes,
});

async function payStep(step: string): Promise<StepReport> {
  const funnel = (await (await fetch(`${app.url}/ops/funnel.json?days=1&channel=ussd`)).json()) as FunnelReport;
  return funnel.flows.find((f) => f.flow === 'pay')!.steps.find((s) => s.step === step)!;
}

describe("Africa's Talking's end-of-session report", () => {
  it('marks the step where the session died, once, also when the next dial leaves the same run', async () => {
    const before = (await payStep('awaitingAmount')).abandoned;
    const at = await toAmount(nextPhone());
    const res = await report(atReport(at));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ recorded: true });
    expect((await payStep('awaitingAmount')).abandoned).toBe(before + 1);
    // Sent again, then the user dials again (the engine leaves the same run): still one.
    await report(atReport(at));
    await new AtSession(app.url, at.phoneNumber).dial();
    expect((await payStep('awaitingAmount')).abandoned).toBe(before + 1);
  });

  it('finds the number from the session when the report does not carry it', async () => {
    const before = (await payStep('awaitingAmount')).abandoned;
    const at = await toAmount(nextPhone());
    const { phoneNumber: _, ...withoutNumber } = atReport(at);
    expect(await (await report(withoutNumber)).json()).toEqual({ recorded: true });
    expect((await payStep('awaitingAmount')).abandoned).toBe(before + 1);
  });

  it('counts nothing for another session of the number, an unknown session, or one that ended on our END', async () => {
    const before = (await payStep('awaitingAmount')).abandoned;
    const at = await toAmount(nextPhone());
    const stale = await report(atReport(at, { sessionId: 'ATUid_an-older-session' }));
    expect(stale.status).toBe(200);
    expect(await stale.json()).toEqual({ recorded: false, reason: "not the conversation's current session" });
    const unknown = await report(atReport(at, { sessionId: 'ATUid_never-seen', phoneNumber: '' }));
    expect(await unknown.json()).toEqual({ recorded: false, reason: 'no conversation is known for this session' });
    const success = await report(atReport(at, { status: 'Success' }));
    expect(await success.json()).toEqual({ recorded: false, reason: 'the session ended on our END screen' });
    expect((await payStep('awaitingAmount')).abandoned).toBe(before);
    // The conversation itself is untouched: the same session goes on.
    expect(await at.answer('5000')).toMatch(/currency/i);
  });

  it.each([
    ['an empty body', {}, /sessionId/],
    ['no status', { sessionId: 'ATUid_1' }, /status/],
    ['an unknown status', { sessionId: 'ATUid_1', status: 'Exploded' }, /status: one of Success, Incomplete, Failed/],
    ['a session id of 200 characters', { sessionId: 'x'.repeat(200), status: 'Incomplete' }, /sessionId/],
    ['hops that are not a number', { sessionId: 'ATUid_1', status: 'Failed', hopsCount: 'many' }, /hopsCount/],
    ['an input of 5,000 characters', { sessionId: 'ATUid_1', status: 'Incomplete', input: '1*'.repeat(2500) }, /input/],
    [
      'a phone number that is not one',
      { sessionId: 'ATUid_1', status: 'Incomplete', phoneNumber: 'call me' },
      /phoneNumber/,
    ],
  ])('refuses %s with 400 and a reason', async (_what, fields, reason) => {
    const res = await report(fields);
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatch(reason);
  });

  it('refuses a body that is not a form, and never logs the answers or the last screen', async () => {
    const json = await fetch(`${app.url}/ussd/africastalking/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sessionId: 'ATUid_1', status: 'Incomplete' }),
    });
    expect(json.status).toBe(400);
    const at = await toAmount(nextPhone());
    await report(
      atReport(at, {
        input: '1*1*0772000001*Sarah*Nakato*5000*1*rent*1*918273',
        lastAppResponse: 'CON Secret-screen-text',
      }),
    );
    const logged = lines.join('\n');
    expect(logged).toContain('ussd session report');
    expect(logged).not.toContain('918273');
    expect(logged).not.toContain('Secret-screen-text');
    expect(logged).not.toContain(at.phoneNumber.slice(4));
  });
});

describe("a gateway's release", () => {
  it("marks where Hubtel's session ended", async () => {
    const before = (await payStep('awaitingPhone')).abandoned;
    const mobile = nextPhone().slice(1);
    const hubtel = async (Type: string, Message: string, Sequence: number) => {
      const res = await fetch(`${app.url}/ussd/hubtel`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          Type,
          Mobile: mobile,
          SessionId: 'hubtel-session-1',
          ServiceCode: '713',
          Message,
          Operator: 'mtn',
          Sequence,
        }),
      });
      expect(res.status).toBe(200);
      return (await res.json()) as { Message: string };
    };
    await hubtel('Initiation', '*713#', 1);
    await hubtel('Response', '1', 2);
    expect((await hubtel('Response', '1', 3)).Message).toMatch(/phone number/i);
    await hubtel('Release', '', 4);
    expect((await payStep('awaitingPhone')).abandoned).toBe(before + 1);
  });
});
