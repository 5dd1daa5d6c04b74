/**
 * Outcomes by SMS (issue 19): Africa's Talking's SMS API played by a local HTTP server speaking its wire
 * format (form `username, to, message[, from]`, header `apiKey`, JSON `SMSMessageData.Recipients[]`), the
 * once-per-outcome worker over the notification marks, the start check, and a whole USSD payment whose
 * outcome is texted once to the payer's number, which no log line shows in full.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { startApp, type RunningApp } from '../../src/app.js';
import { MemoryMarks } from '../../src/notifications/marks.js';
import { africasTalkingSms, smsWork, SmsRefused, type SmsSender } from '../../src/notifications/sms.js';
import { captureLogger } from '../adapters/ussd/helpers.js';
import { AtSession } from '../e2e/helpers.js';
import { reading, until } from '../until.js';
import { productDatabase } from '../journal/server-database.js';

interface Received {
  headers: Record<string, string | string[] | undefined>;
  form: Record<string, string>;
}

/** Africa's Talking's SMS endpoint: answers each request with the next scripted status (then 101 Success). */
async function atSmsServer(script: Array<{ http?: number; statusCode?: number; status?: string }> = []) {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const form = Object.fromEntries(new URLSearchParams(body));
      received.push({ headers: req.headers, form });
      const next = script.shift() ?? {};
      if (next.http && next.http >= 400) {
        res.writeHead(next.http, { 'content-type': 'text/plain' }).end('The service is unavailable');
        return;
      }
      const recipient = {
        statusCode: next.statusCode ?? 101,
        number: form.to,
        status: next.status ?? 'Success',
        cost: 'UGX 30.0000',
        messageId: `ATXid_${received.length}`,
      };
      res.writeHead(201, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          SMSMessageData: { Message: 'Sent to 1/1 Total Cost: UGX 30.0000', Recipients: [recipient] },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/version1/messaging`;
  return { url, received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe("Africa's Talking SMS client", () => {
  it('posts the form with apiKey and Accept: application/json, and reads the recipients', async () => {
    const at = await atSmsServer();
    try {
      const { logger } = captureLogger();
      const sms = africasTalkingSms({ username: 'sandbox', apiKey: 'at-key-1', from: 'MOMO', url: at.url, logger });
      await sms.send('+256772123456', 'Paid 5000 UGX');
      expect(at.received).toHaveLength(1);
      const [request] = at.received;
      expect(request!.form).toEqual({
        username: 'sandbox',
        to: '+256772123456',
        message: 'Paid 5000 UGX',
        from: 'MOMO',
      });
      expect(request!.headers.apikey).toBe('at-key-1');
      expect(request!.headers.accept).toBe('application/json');
      expect(request!.headers['content-type']).toMatch(/application\/x-www-form-urlencoded/);
    } finally {
      await at.close();
    }
  });

  it('a 5xx or a failed recipient status throws (retried); a refusal such as an invalid number is SmsRefused', async () => {
    const at = await atSmsServer([
      { http: 503 },
      { statusCode: 500, status: 'InternalServerError' },
      { statusCode: 403, status: 'InvalidPhoneNumber' },
    ]);
    try {
      const { logger } = captureLogger();
      const sms = africasTalkingSms({ username: 'u', apiKey: 'k', url: at.url, logger });
      await expect(sms.send('+256772123456', 'x')).rejects.toThrow(/503/);
      await expect(sms.send('+256772123456', 'x')).rejects.toThrow(/500 InternalServerError/);
      await expect(sms.send('+256772123456', 'x')).rejects.toBeInstanceOf(SmsRefused);
      expect(at.received.every((r) => r.form.from === undefined)).toBe(true);
    } finally {
      await at.close();
    }
  });
});

describe('one SMS per outcome', () => {
  it('the same outcome queued twice is sent once; a failed send is sent by the retry, once', async () => {
    const sent: string[] = [];
    let failNext = true;
    const flaky: SmsSender = {
      async send(to, text) {
        if (failNext) {
          failNext = false;
          throw new Error('network down');
        }
        sent.push(`${to}:${text}`);
      },
    };
    const { logger, lines } = captureLogger();
    const work = smsWork({ sender: flaky, marks: new MemoryMarks(), ttlSeconds: 60, leaseMs: 5000, logger });
    const job = { to: '+256772123456', text: 'Paid', key: 'payment:1:processed' };
    await expect(work(job)).rejects.toThrow(/network down/);
    await work(job);
    await work(job);
    await work({ ...job, key: 'payment:2:processed' });
    expect(sent).toEqual(['+256772123456:Paid', '+256772123456:Paid']);
    expect(lines.join('\n')).not.toContain('772123456');
  });
});

describe('start checks', () => {
  it('SMS_PROVIDER=africastalking without AT_USERNAME or AT_API_KEY refuses to start, naming the setting', () => {
    expect(() => loadConfig({ SMS_PROVIDER: 'africastalking', AT_USERNAME: 'sandbox' })).toThrow(ConfigError);
    expect(() => loadConfig({ SMS_PROVIDER: 'africastalking', AT_USERNAME: 'sandbox' })).toThrow(/AT_API_KEY/);
    expect(() => loadConfig({ SMS_PROVIDER: 'africastalking', AT_API_KEY: 'k' })).toThrow(/AT_USERNAME/);
    expect(() => loadConfig({ SMS_PROVIDER: 'twilio' })).toThrow(/SMS_PROVIDER/);
    expect(loadConfig({}).AT_SMS_URL).toBe('https://api.africastalking.com/version1/messaging');
  });
});

describe('a whole USSD payment with SMS_PROVIDER=africastalking', () => {
  let at: Awaited<ReturnType<typeof atSmsServer>>;
  let app: RunningApp;
  const { logger, lines } = captureLogger();
  beforeAll(async () => {
    at = await atSmsServer();
    app = await startApp(
      loadConfig({
        ...(await productDatabase()),
        PORT: '0',
        LOG_LEVEL: 'info',
        SMS_PROVIDER: 'africastalking',
        AT_USERNAME: 'sandbox',
        AT_API_KEY: 'at-key-2',
        SMS_SENDER_ID: 'MOMO',
        AT_SMS_URL: at.url,
      }),
      { logger },
    );
  });
  afterAll(async () => {
    await app?.stop();
    await at?.close();
  });

  it("texts the payer's number the outcome once, and still shows it at the next dial", async () => {
    const me = '+256700222333';
    const ussd = new AtSession(app.url, me);
    await ussd.dial();
    for (const answer of ['1', '1', '0772000001', 'Sarah', 'Nakato', '5000', '1', '1']) await ussd.answer(answer);
    expect(await ussd.answer('1234')).toMatch(/^END Sent: 5,000 UGX/);
    const texted = await until(
      'the outcome by SMS',
      reading(
        async () => at.received.filter((r) => r.form.to === me),
        (r) => r.some((x) => /5,000 UGX/.test(x.form.message ?? '')),
      ),
      { timeoutMs: 10_000, everyMs: 50 },
    );
    expect(texted[0]!.form).toMatchObject({ username: 'sandbox', from: 'MOMO' });
    expect(texted[0]!.headers.apikey).toBe('at-key-2');
    const next = await new AtSession(app.url, me).dial();
    expect(next).toMatch(/5,000 UGX/);
    // Once per outcome: the same words are never texted twice.
    const messages = at.received.filter((r) => r.form.to === me).map((r) => r.form.message);
    expect(new Set(messages).size).toBe(messages.length);
    expect(lines.join('\n')).not.toContain('700222333');
  });
});
