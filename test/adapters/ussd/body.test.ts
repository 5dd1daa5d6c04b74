/**
 * The gateways' bodies as src/http/body.ts reads them, over real HTTP: what body-parser answered before
 * (the same statuses and reasons) and the cases a gateway or a prober can send.
 */
import { request } from 'node:http';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { PIN, startUssd } from './helpers.js';

let app: Awaited<ReturnType<typeof startUssd>> | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

/** A raw request: any headers, the body in chunks (no content-length unless given). */
function raw(
  url: string,
  path: string,
  headers: Record<string, string>,
  chunks: (string | Buffer)[],
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method: 'POST', headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    for (const chunk of chunks) req.write(chunk);
    req.end();
  });
}

const form = 'application/x-www-form-urlencoded';
const fields = (text: string, sessionId = 'B-1') =>
  `sessionId=${sessionId}&serviceCode=*384*123%23&phoneNumber=%2B256772123456&text=${encodeURIComponent(text)}`;

describe('USSD request bodies', () => {
  it('reads a form sent in several chunks without a length, and one whose content type names utf-8', async () => {
    app = await startUssd();
    const body = fields('');
    const chunked = await raw(app.url, '/ussd/africastalking', { 'content-type': form }, [
      body.slice(0, 7),
      body.slice(7, 30),
      body.slice(30),
    ]);
    expect(chunked.status).toBe(200);
    expect(chunked.body).toMatch(/^CON Welcome to MoMo/);
    const named = await raw(app.url, '/ussd/africastalking', { 'content-type': `${form}; charset=UTF-8` }, [
      fields('', 'B-2'),
    ]);
    expect(named.status).toBe(200);
    expect(app.inbounds).toHaveLength(2);
  });

  it('keeps the last value of a field given twice', async () => {
    app = await startUssd();
    const res = await raw(app.url, '/ussd/africastalking', { 'content-type': form }, [
      `${fields('')}&sessionId=B-LAST`,
    ]);
    expect(res.status).toBe(200);
    expect(app.inbounds[0]?.messageId).toMatch(/^B-LAST:/);
  });

  it('refuses another charset and an unknown compression with 415, reads gzip, and refuses gzip that does not inflate', async () => {
    app = await startUssd();
    const latin = await raw(app.url, '/ussd/africastalking', { 'content-type': `${form}; charset=latin1` }, [
      fields(''),
    ]);
    expect(latin).toEqual({
      status: 415,
      body: JSON.stringify({ error: 'body must be utf-8, uncompressed or gzip, deflate or br' }),
    });
    const compress = await raw(
      app.url,
      '/ussd/africastalking',
      { 'content-type': form, 'content-encoding': 'compress' },
      [fields('')],
    );
    expect(compress.status).toBe(415);
    expect(app.inbounds).toHaveLength(0);
    const gzip = await raw(app.url, '/ussd/africastalking', { 'content-type': form, 'content-encoding': 'gzip' }, [
      gzipSync(fields('')),
    ]);
    expect(gzip.status).toBe(200);
    expect(gzip.body).toMatch(/^CON Welcome to MoMo/);
    const broken = await raw(
      app.url,
      '/ussd/hubtel',
      { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      ['\x1f\x8b not gzip'],
    );
    expect(broken).toEqual({ status: 400, body: JSON.stringify({ error: 'body could not be read' }) });
  });

  it('refuses a body over the limit while it streams in, without a length given or inflated, with 413', async () => {
    app = await startUssd();
    const chunks = Array.from({ length: 20 }, () => `text=${'9'.repeat(1000)}&`);
    const res = await raw(app.url, '/ussd/africastalking', { 'content-type': form }, chunks);
    expect(res).toEqual({ status: 413, body: JSON.stringify({ error: 'body too large' }) });
    // 40 kB of form that gzips to well under the limit: the limit counts what is read, not what was sent.
    const bomb = await raw(app.url, '/ussd/africastalking', { 'content-type': form, 'content-encoding': 'gzip' }, [
      gzipSync(`text=${'9'.repeat(40_000)}`),
    ]);
    expect(bomb).toEqual({ status: 413, body: JSON.stringify({ error: 'body too large' }) });
    // The connection is still good for the next request.
    expect((await raw(app.url, '/ussd/africastalking', { 'content-type': form }, [fields('')])).status).toBe(200);
  });

  it('does not read a body of another type: the gateway is told what it must send', async () => {
    app = await startUssd();
    const json = await raw(app.url, '/ussd/africastalking', { 'content-type': 'application/json' }, [
      JSON.stringify({ sessionId: 'B-1', text: PIN }),
    ]);
    expect(json).toEqual({ status: 400, body: JSON.stringify({ error: 'expected a body of named fields' }) });
    const none = await raw(app.url, '/ussd/nalo', {}, ['{}']);
    expect(none.status).toBe(400);
    expect(app.logs.join('\n')).not.toContain(PIN);
  });

  it('answers an empty JSON body and a JSON string with 400 and a reason, never a 500', async () => {
    app = await startUssd();
    const empty = await raw(app.url, '/ussd/arkesel', { 'content-type': 'application/json' }, []);
    expect(empty.status).toBe(400);
    expect(JSON.parse(empty.body).error).toMatch(/sessionID/);
    const string = await raw(app.url, '/ussd/arkesel', { 'content-type': 'application/json' }, ['"hello"']);
    expect(string).toEqual({ status: 400, body: JSON.stringify({ error: 'expected a body of named fields' }) });
    const broken = await raw(app.url, '/ussd/arkesel', { 'content-type': 'application/json' }, [
      `{"userData":"${PIN}"`,
    ]);
    expect(broken).toEqual({ status: 400, body: JSON.stringify({ error: 'body is not valid JSON' }) });
    expect(app.logs.join('\n')).not.toContain(PIN);
  });
});
