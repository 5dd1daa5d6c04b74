import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningApp } from '../../src/app.js';
import { AtSession, sandboxGet, startProduct } from './helpers.js';
import { reading, until } from '../until.js';

interface Payments {
  count: number;
  results: Array<{
    id: number;
    state: string;
    amount: string;
    metadata: Record<string, string> | null;
    phone_nos: Array<{ phonenumber: string }>;
  }>;
}

let app: RunningApp;
beforeAll(async () => {
  app = await startProduct();
});
afterAll(async () => {
  await app.stop();
});

describe("a whole USSD payment through the product (Africa's Talking, embedded sandbox)", () => {
  it('pays once, also when the gateway resends, and shows the outcome at the next dial', async () => {
    const me = '+256700111222';
    const ussd = new AtSession(app.url, me);
    expect(await ussd.dial()).toMatch(/^CON /);
    await ussd.answer('1'); // pay someone
    await ussd.answer('1'); // mobile money
    expect(await ussd.answer('0772000001')).toMatch(/first name/i);
    await ussd.answer('Sarah');
    expect(await ussd.answer('Nakato')).toMatch(/amount/i);
    expect(await ussd.answer('5000')).toMatch(/currency/i);
    const summary = await ussd.answer('1'); // UGX: no description is asked
    expect(summary).toMatch(/5,000 UGX/);
    expect(summary).toMatch(/Sarah Nakato/);
    expect(await ussd.answer('1')).toMatch(/PIN/);
    const outcome = await ussd.answer('1234');
    expect(outcome).toMatch(/^END /);
    expect(await ussd.resend()).toBe(outcome);
    for (const screen of ussd.screens) expect(screen.length).toBeLessThanOrEqual(182);

    const paid = await until(
      'the payment to be processed',
      reading(
        () => sandboxGet<Payments>(app, '/api/payments?phonenumber=%2B256772000001'),
        (p) => p.count >= 1 && p.results[0]!.state === 'processed',
      ),
      { timeoutMs: 10_000, everyMs: 50 },
    );
    expect(paid.count).toBe(1);
    expect(paid.results[0]!.metadata).toMatchObject({ chat: `ussd:${me}` });

    // The service's webhooks reach the product; USSD keeps them for the next dial.
    const next = await until(
      'the outcome at the next dial',
      reading(
        async () => new AtSession(app.url, me).dial(),
        (screen) => /reached|Done/i.test(screen),
      ),
      { timeoutMs: 10_000, everyMs: 50 },
    );
    expect(next).toMatch(/5,000 UGX/);
    // The run's own answer, kept in case it never reached the phone, gave way to the service's outcome.
    expect(next).not.toMatch(/Sent: /);
    expect(next.replace(/^(CON|END) /, '').length).toBeLessThanOrEqual(182);
  });

  it("reads a caller's local numbers in their country, with its examples, currencies and a word for abroad", async () => {
    // A Kenyan caller: 0712000001 is Kenyan (+254712000001), paid in KES; the examples are Kenyan.
    const kenyan = new AtSession(app.url, '+254712345680');
    await kenyan.dial();
    await kenyan.answer('1'); // pay someone
    await kenyan.answer('1'); // mobile money
    expect(await kenyan.answer('0712')).toMatch(/Try e\.g\. 0712123456 or \+254712123456\./);
    expect(await kenyan.answer('0712000001')).toMatch(/first name/i);
    await kenyan.answer('Mary');
    await kenyan.answer('Njeri');
    // The sandbox's test number may also be paid in the test currency; no other country's currency is offered.
    expect(await kenyan.answer('700')).toMatch(/^CON Choose the currency:\n1\. KES\n2\. BXC\n0 Back/);
    const summary = await kenyan.answer('1');
    expect(summary).toMatch(/^CON Send 700 KES of mobile money to .+ \(\+254712000001\)\?/);
    expect(summary).not.toMatch(/abroad/);

    // A Ugandan number typed by the Kenyan caller: the summary says it is abroad.
    const across = new AtSession(app.url, '+254712345681');
    await across.dial();
    await across.answer('1');
    await across.answer('1');
    await across.answer('+256772123456');
    await across.answer('Grace');
    await across.answer('Otieno');
    const abroad = await across.answer('700'); // KES, the caller's one currency: no currency screen
    expect(abroad).toMatch(
      /^CON This number is abroad \(Uganda\)\.\nSend 700 KES of mobile money to .+\(\+256772123456\)\?/,
    );
    expect(await across.answer('2')).toMatch(/^END /); // cancel: nothing sent

    // A Ugandan caller paying anyone but a test number is offered UGX alone: no currency screen.
    const ugandan = new AtSession(app.url, '+256700111444');
    await ugandan.dial();
    await ugandan.answer('1');
    await ugandan.answer('1');
    expect(await ugandan.answer('0712')).toMatch(/Try e\.g\. 0772123456 or \+256772123456\./);
    await ugandan.answer('0772123456');
    await ugandan.answer('Grace');
    await ugandan.answer('Otieno');
    const home = await ugandan.answer('700');
    expect(home).toMatch(/^CON Send 700 UGX of mobile money to .+ \(\+256772123456\)\?/);
    expect(home).not.toMatch(/abroad/);
    for (const screen of [...kenyan.screens, ...across.screens, ...ugandan.screens])
      expect(screen.length).toBeLessThanOrEqual(182);
  });

  it('offers a Nigerian caller no currency (none allowed for Nigeria) and says so in one line, in every language', async () => {
    const said: Record<string, string[]> = {};
    for (const [lang, key] of [
      ['en', ''],
      ['sw', '2'],
      ['fr', '3'],
    ] as const) {
      const caller = `+23480314000${lang === 'en' ? '11' : lang === 'sw' ? '12' : '13'}`;
      if (key) {
        const setup = new AtSession(app.url, caller);
        const menu = await setup.dial();
        const language = /(\d+)\. (Language|Lugha|Langue)/.exec(menu)?.[1] ?? '';
        await setup.answer(language);
        await setup.answer(key);
      }
      const screens: string[] = [];
      for (const flow of [1, 2]) {
        const nigerian = new AtSession(app.url, caller);
        await nigerian.dial();
        screens.push(await nigerian.answer(String(flow)));
      }
      said[lang] = screens;
    }
    expect(said.en).toEqual([
      'END No currency of your country can be paid here yet.',
      'END No currency of your country can be requested here yet.',
    ]);
    expect(said.sw).toEqual([
      'END Hakuna sarafu ya nchi yako inayoweza kulipwa hapa bado.',
      'END Hakuna sarafu ya nchi yako inayoweza kuombwa hapa bado.',
    ]);
    // ê is not in the GSM 7-bit alphabet, é is: the phone shows what it can.
    expect(said.fr).toEqual([
      'END Aucune monnaie de votre pays ne peut encore etre payée ici.',
      'END Aucune monnaie de votre pays ne peut encore etre demandée ici.',
    ]);
  });

  it('counts finished and abandoned conversations per flow and step, and the service answers, at /metrics', async () => {
    const me = '+256700111333';
    const left = new AtSession(app.url, me);
    await left.dial();
    await left.answer('2'); // request money, then the user hangs up at the phone step
    const redial = new AtSession(app.url, me);
    expect(await redial.dial()).toMatch(/Continue where you left off/);
    await redial.answer('2'); // start over: the request is left
    const metrics = await (await fetch(`${app.url}/metrics`)).text();
    expect(metrics).toMatch(/momo_conversations_total\{flow="pay",outcome="finished",step="done"\} [1-9]/);
    expect(metrics).toMatch(/momo_conversations_total\{flow="request",outcome="abandoned",step="[a-zA-Z.]+"\} 1/);
    expect(metrics).toMatch(/momo_service_responses_total\{status="201"\} [1-9]/);
    expect(metrics).toMatch(/momo_http_requests_total\{channel="ussd",status="2xx"\} [1-9]/);
    expect(metrics).toMatch(/momo_notification_queue_depth \d/);
  });
});
