import { afterEach, describe, expect, it } from 'vitest';
import { PHONE, PIN, postJson, startUssd } from './helpers.js';

type Started = Awaited<ReturnType<typeof startUssd>>;
let app: Started | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

const MSISDN = '256772123456';

describe('Hubtel', () => {
  const req = (Type: string, Sequence: number, Message = '', SessionId = 'H-1') => ({
    Type,
    Mobile: MSISDN,
    SessionId,
    ServiceCode: '713*1',
    Message,
    Operator: 'mtn',
    Sequence,
    ClientState: '',
  });

  it('runs a payment from initiation to release, in any case of Type', async () => {
    app = await startUssd();
    const first = await postJson(app.url, 'hubtel', req('initiation', 1, '*713*1#'));
    expect(first.status).toBe(200);
    expect(first.json).toMatchObject({
      SessionId: 'H-1',
      Type: 'response',
      DataType: 'input',
      FieldType: 'text',
      Label: 'Welcome to MoMo',
    });
    expect(first.json.Message).toContain('1. Pay someone');
    expect((await postJson(app.url, 'hubtel', req('Response', 2, '1'))).json.Message).toMatch(/^Enter amount/);
    await postJson(app.url, 'hubtel', req('RESPONSE', 3, '300'));
    const paid = await postJson(app.url, 'hubtel', req('response', 4, PIN));
    expect(paid.json).toMatchObject({ Type: 'release', Message: 'Paid 300 UGX. Thank you.' });
    expect(app.payments).toEqual([{ phone: PHONE, amount: '300' }]);
    expect(app.inbounds.map((i) => i.messageId)).toEqual(['H-1:0', 'H-1:1', 'H-1:2', 'H-1:3']);
  });

  it('answers a resent Sequence with the same screen and one effect', async () => {
    app = await startUssd();
    await postJson(app.url, 'hubtel', req('initiation', 1));
    await postJson(app.url, 'hubtel', req('response', 2, '1'));
    await postJson(app.url, 'hubtel', req('response', 3, '800'));
    const once = await postJson(app.url, 'hubtel', req('response', 4, PIN));
    const twice = await postJson(app.url, 'hubtel', req('response', 4, PIN));
    expect(twice.json).toEqual(once.json);
    expect(app.payments).toHaveLength(1);
    const resentAmount = await postJson(app.url, 'hubtel', req('response', 3, '800'));
    expect(resentAmount.json).toEqual(once.json);
  });

  it('ends the session on release and on timeout', async () => {
    app = await startUssd();
    await postJson(app.url, 'hubtel', req('initiation', 1));
    const released = await postJson(app.url, 'hubtel', req('release', 2));
    expect(released.json).toMatchObject({ Type: 'release', SessionId: 'H-1' });
    await postJson(app.url, 'hubtel', req('initiation', 1, '', 'H-2'));
    const timedOut = await postJson(app.url, 'hubtel', req('Timeout', 2, '', 'H-2'));
    expect(timedOut.json).toMatchObject({ Type: 'release', SessionId: 'H-2' });
    expect(app.inbounds).toHaveLength(2);
  });

  it('refuses an unknown Type and a body that is not JSON with 400', async () => {
    app = await startUssd();
    const unknown = await postJson(app.url, 'hubtel', req('AddToCart', 1));
    expect(unknown.status).toBe(400);
    expect(unknown.json.error).toMatch(/^Type:/);
    const broken = await postJson(app.url, 'hubtel', `{"Type":"response","Message":"${PIN}"`);
    expect(broken).toEqual({ status: 400, json: { error: 'body is not valid JSON' } });
    expect(app.logs.join('\n')).not.toContain(PIN);
  });
});

describe('Arkesel', () => {
  const req = (newSession: boolean, userData: string, sessionID = 'A-1') => ({
    sessionID,
    userID: 'APP_1',
    newSession,
    msisdn: MSISDN,
    userData,
    network: 'MTN',
  });

  it('runs a payment and echoes sessionID, userID and msisdn', async () => {
    app = await startUssd();
    const first = await postJson(app.url, 'arkesel', req(true, '*928*1#'));
    expect(first.json).toMatchObject({ sessionID: 'A-1', userID: 'APP_1', msisdn: MSISDN, continueSession: true });
    expect(first.json.message).toMatch(/^Welcome to MoMo/);
    await postJson(app.url, 'arkesel', req(false, '1'));
    await postJson(app.url, 'arkesel', req(false, '1200'));
    const paid = await postJson(app.url, 'arkesel', req(false, PIN));
    expect(paid.json).toMatchObject({ continueSession: false, message: 'Paid 1200 UGX. Thank you.' });
    expect(app.payments).toEqual([{ phone: PHONE, amount: '1200' }]);
    // After the END, a repeated request changes nothing.
    expect((await postJson(app.url, 'arkesel', req(false, PIN))).json).toEqual(paid.json);
    expect(app.payments).toHaveLength(1);
  });

  it('treats a repeated newSession request as a resend of the first screen', async () => {
    app = await startUssd();
    const first = await postJson(app.url, 'arkesel', req(true, '*928*1#'));
    const again = await postJson(app.url, 'arkesel', req(true, '*928*1#'));
    expect(again.json).toEqual(first.json);
    expect(app.inbounds).toHaveLength(1);
  });

  it('refuses a body without msisdn', async () => {
    app = await startUssd();
    const { msisdn: _omitted, ...rest } = req(true, '');
    const res = await postJson(app.url, 'arkesel', rest);
    expect(res.status).toBe(400);
    expect(res.json.error).toMatch(/^msisdn:/);
  });
});

describe('Nalo', () => {
  const req = (MSGTYPE: boolean, USERDATA: string) => ({
    USERID: 'NALOTest',
    MSISDN,
    USERDATA,
    MSGTYPE,
    NETWORK: 'MTN',
    SESSIONID: 'N-1',
  });

  it('runs a payment with MSGTYPE true on the dial and false at the end', async () => {
    app = await startUssd();
    const first = await postJson(app.url, 'nalo', req(true, '*920#'));
    expect(first.json).toMatchObject({ USERID: 'NALOTest', MSISDN, MSGTYPE: true });
    expect(first.json.MSG).toMatch(/^Welcome to MoMo/);
    await postJson(app.url, 'nalo', req(false, '1'));
    await postJson(app.url, 'nalo', req(false, '50'));
    const paid = await postJson(app.url, 'nalo', req(false, PIN));
    expect(paid.json).toEqual({ USERID: 'NALOTest', MSISDN, MSG: 'Paid 50 UGX. Thank you.', MSGTYPE: false });
    expect(app.payments).toHaveLength(1);
  });

  it('accepts MSGTYPE as the string "true" and refuses a missing SESSIONID', async () => {
    app = await startUssd();
    const ok = await postJson(app.url, 'nalo', { ...req(true, ''), MSGTYPE: 'true' });
    expect(ok.json.MSGTYPE).toBe(true);
    const { SESSIONID: _omitted, ...rest } = req(true, '');
    const bad = await postJson(app.url, 'nalo', rest);
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatch(/^SESSIONID:/);
  });
});

describe('Beem', () => {
  const req = (command: string, request_id: number, response: string) => ({
    command,
    msisdn: MSISDN,
    session_id: 'B-1',
    operator: 'vodacom',
    payload: { request_id, response },
  });

  it('numbers screens with request_id and treats an answered request_id as a resend', async () => {
    app = await startUssd();
    const first = await postJson(app.url, 'beem', req('initiate', 0, '0'));
    expect(first.json).toMatchObject({
      msisdn: MSISDN,
      operator: 'vodacom',
      session_id: 'B-1',
      command: 'continue',
      payload: { request_id: 1 },
    });
    expect(first.json.payload.request).toMatch(/^Welcome to MoMo/);
    const amount = await postJson(app.url, 'beem', req('continue', 1, '1'));
    expect(amount.json.payload).toEqual({ request_id: 2, request: 'Enter amount\n0 Back 00 Home' });
    const resent = await postJson(app.url, 'beem', req('continue', 1, '1'));
    expect(resent.json).toEqual(amount.json);
    await postJson(app.url, 'beem', req('continue', 2, '90'));
    const paid = await postJson(app.url, 'beem', req('continue', 3, PIN));
    expect(paid.json).toMatchObject({ command: 'terminate', payload: { request: 'Paid 90 UGX. Thank you.' } });
    expect(app.payments).toHaveLength(1);
    expect(app.inbounds.map((i) => i.messageId)).toEqual(['B-1:0', 'B-1:1', 'B-1:2', 'B-1:3']);
  });

  it('ends the session on terminate and refuses an unknown command', async () => {
    app = await startUssd();
    await postJson(app.url, 'beem', req('initiate', 0, ''));
    const ended = await postJson(app.url, 'beem', req('terminate', 1, ''));
    expect(ended.json).toMatchObject({ command: 'terminate', session_id: 'B-1' });
    expect(app.inbounds).toHaveLength(1);
    const bad = await postJson(app.url, 'beem', req('explode', 0, ''));
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatch(/^command:/);
  });
});

describe('every gateway', () => {
  it('refuses a JSON array, a wrong content type and an oversized body with a 4xx and a reason', async () => {
    app = await startUssd();
    for (const gateway of ['hubtel', 'arkesel', 'nalo', 'beem']) {
      const array = await postJson(app.url, gateway, [1, 2]);
      expect(array.status).toBe(400);
      expect(array.json.error).toBe('expected a body of named fields');
      const form = await fetch(`${app.url}/ussd/${gateway}`, { method: 'POST', body: new URLSearchParams({ a: '1' }) });
      expect(form.status).toBe(400);
      expect((await form.json()).error).toBe('expected a body of named fields');
    }
    const huge = await postJson(app.url, 'nalo', { USERDATA: 'x'.repeat(20_000) });
    expect(huge).toEqual({ status: 413, json: { error: 'body too large' } });
    expect(app.inbounds).toHaveLength(0);
  });
});
