/**
 * The Graph API client: the retry decision as a table, and sends over real HTTP to the local Graph API
 * server: the wire body and token, a 429 then success, throttling codes Meta sends with 400, final
 * refusals, no answer at all, and a failure for good logged with the number masked and counted.
 */
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createGraphApi,
  GraphApiError,
  GraphConnectionError,
  retryDelay,
  type CallFailure,
} from '../../../adapters/whatsapp/graph-api.js';
import { createLogger } from '../../../src/log.js';
import { graphError, PHONE_NUMBER_ID, startFakeGraphApi, TOKEN, type FakeGraphApi } from './fake-graph-api.js';

const settings = { maxRetries: 3, baseDelayMs: 500, maxDelayMs: 8000, maxRetryAfterSeconds: 30, random: () => 1 };

describe('retryDelay', () => {
  const api = (status: number, code?: number, retryAfterSeconds?: number): CallFailure => ({
    kind: 'api',
    status,
    code,
    retryAfterSeconds,
  });
  it.each([
    ['no answer', { kind: 'network' } as CallFailure, 0, 500],
    ['no answer, third retry', { kind: 'network' } as CallFailure, 2, 2000],
    ['429', api(429), 0, 500],
    ['429 with Retry-After 2', api(429, undefined, 2), 0, 2000],
    ['429 with Retry-After past the longest wait', api(429, undefined, 120), 0, null],
    ['500', api(500), 1, 1000],
    ['503 code 131016 service unavailable', api(503, 131016), 0, 500],
    ['400 code 130429 throughput reached', api(400, 130429), 0, 500],
    ['400 code 131056 pair rate limit', api(400, 131056), 1, 1000],
    ['400 code 4 app call limit', api(400, 4), 0, 500],
    ['400 code 80007 account rate limit', api(400, 80007), 0, 500],
    ['500 code 131000 something went wrong', api(500, 131000), 0, 500],
    ['400 code 100 invalid parameter', api(400, 100), 0, null],
    ['401 code 190 token expired', api(401, 190), 0, null],
    ['400 code 131047 window closed', api(400, 131047), 0, null],
    ['400 code 132001 template missing', api(400, 132001), 0, null],
    ['403 code 10 permission denied', api(403, 10), 0, null],
    ['500 after the last retry', api(500), 3, null],
  ])('%s', (_name, failure, retry, expected) => {
    expect(retryDelay(failure, retry, settings)).toBe(expected);
  });

  it('caps the backoff and jitters it between half and all of it', () => {
    expect(retryDelay({ kind: 'network' }, 9, { ...settings, maxRetries: 20 })).toBe(8000);
    expect(retryDelay({ kind: 'network' }, 2, { ...settings, random: () => 0 })).toBe(1000);
  });
});

let graph: FakeGraphApi | undefined;
afterEach(async () => {
  await graph?.close();
  graph = undefined;
});

function client(apiUrl: string, token = TOKEN) {
  const logs: string[] = [];
  const sleeps: number[] = [];
  const counted: string[] = [];
  const api = createGraphApi({
    apiUrl,
    phoneNumberId: PHONE_NUMBER_ID,
    token,
    retry: { sleep: async (ms) => void sleeps.push(ms), random: () => 1 },
    timeoutMs: 2000,
    counter: { message: (kind, outcome) => void counted.push(`${kind} ${outcome}`) },
    logger: createLogger('debug', { write: (line: string) => void logs.push(line) }),
  });
  return { api, logs, sleeps, counted };
}

const hello = { type: 'text' as const, text: { body: 'Hello', preview_url: false } };

describe('createGraphApi', () => {
  it('posts the documented body with the bearer token and returns the wamid', async () => {
    graph = await startFakeGraphApi();
    const { api, counted } = client(graph.apiUrl);
    expect(await api.send('256772000001', hello)).toBe('wamid.TEST1');
    expect(graph.sent).toEqual([
      {
        messaging_product: 'whatsapp',
        recipient_type: 'individual',
        to: '256772000001',
        ...hello,
        wamid: 'wamid.TEST1',
      },
    ]);
    await api.markRead('wamid.IN1');
    expect(graph.sent[1]).toEqual({
      messaging_product: 'whatsapp',
      status: 'read',
      message_id: 'wamid.IN1',
      wamid: 'wamid.TEST2',
    });
    expect(counted).toEqual(['text sent', 'read sent']);
  });

  it('repeats after a 429 (waiting its Retry-After) and after a throttling code sent with 400', async () => {
    graph = await startFakeGraphApi();
    const { api, sleeps } = client(graph.apiUrl);
    graph.failNext(429, graphError(130429, '(#130429) Rate limit hit'), { headers: { 'retry-after': '3' } });
    graph.failNext(400, graphError(131056, '(#131056) (Business Account, Consumer Account) pair rate limit hit'));
    expect(await api.send('256772000001', hello)).toBe('wamid.TEST1');
    expect(sleeps).toEqual([3000, 1000]);
    expect(graph.refused.map((r) => r.status)).toEqual([429, 400]);
    expect(graph.sent).toHaveLength(1);
  });

  it("gives up on a final refusal at once: logged with the number masked, counted, thrown with Meta's code", async () => {
    graph = await startFakeGraphApi();
    const { api, sleeps, logs, counted } = client(graph.apiUrl);
    graph.failNext(
      400,
      graphError(131047, 'Re-engagement message: more than 24 hours have passed since 256772000001 replied'),
    );
    const error = await api.send('256772000001', hello).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GraphApiError);
    expect(error).toMatchObject({ status: 400, code: 131047, final: true });
    expect(sleeps).toEqual([]);
    expect(counted).toEqual(['text failed']);
    const line = logs.find((l) => l.includes('message not sent'))!;
    expect(JSON.parse(line)).toMatchObject({ kind: 'text', to: '25677****001', status: 400, code: 131047 });
    expect(logs.join('\n')).not.toContain('256772000001');
    expect(logs.join('\n')).not.toContain(TOKEN);
  });

  it('gives up after its retries when the failures go on, and when the token is refused', async () => {
    graph = await startFakeGraphApi();
    const { api, sleeps } = client(graph.apiUrl);
    graph.failNext(503, graphError(133004, 'Server temporarily unavailable'), { times: 4 });
    await expect(api.send('256772000001', hello)).rejects.toMatchObject({ status: 503, code: 133004, final: false });
    expect(sleeps).toEqual([500, 1000, 2000]);
    const wrong = client(graph.apiUrl, 'forged-token');
    await expect(wrong.api.send('256772000001', hello)).rejects.toMatchObject({ status: 401, code: 190 });
    expect(wrong.sleeps).toEqual([]);
  });

  it('repeats when no answer comes, and reports "no answer" apart from a refusal', async () => {
    // A port that accepts connections and closes them at once.
    const server = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const { port } = server.address() as { port: number };
    const { api, sleeps, counted } = client(`http://127.0.0.1:${port}/v24.0`);
    await expect(api.send('256772000001', hello)).rejects.toBeInstanceOf(GraphConnectionError);
    expect(sleeps).toEqual([500, 1000, 2000]);
    expect(counted).toEqual(['text failed']);
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
});
