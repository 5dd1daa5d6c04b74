/**
 * Bulk payouts in Slack, in the whole product (startApp: real access policy, maker/checker and the embedded
 * sandbox, whose test numbers set each recipient's state), driven by signed Slack requests over HTTP against
 * the local Web API (harness.ts: files.list, files.info, the file download, files.getUploadURLExternal, the
 * upload URL and files.completeUploadExternal in Slack's documented shapes): rows pasted or read from a CSV
 * file shared in the channel, refused by row number or as a file; the payout's one message in the channel,
 * updated in place as the sandbox's webhooks report each recipient and not moved back by a redelivery; its
 * CSV of outcomes uploaded into the thread for the maker and an approver, refused to anyone else.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningApp } from '../../../src/app.js';
import {
  BOT_TOKEN,
  FakeSlack,
  SlackSender,
  TEAM,
  buttonOf,
  memoryLogger,
  startProduct,
  textOf,
  triggerId,
  type Call,
  type Product,
} from './harness.js';
import { until } from '../../until.js';

const MAKER = 'UMAKER1';
const CHECKER = 'UCHECK1';
const CHECKER2 = 'UCHECK2';
const OUTSIDER = 'UTELLER2';
const APPROVALS = 'C0APPROVALS';
/** Where SlackSender runs /momo. */
const CHANNEL = 'C0001';
const WEBHOOK = { user: 'momo-hooks', password: 'hook-secret-for-tests' };

const POLICY = {
  roles: {
    teller: {
      flows: ['pay', 'check'],
      perPaymentLimit: { UGX: '1000000', KES: '100000', BXC: '1000' },
      dailyLimit: { UGX: '5000000', KES: '500000', BXC: '10000' },
      approvalAbove: { UGX: '100000' },
    },
    finance: { flows: ['check'], perPaymentLimit: {}, dailyLimit: {}, approve: true },
  },
  users: {
    slack: {
      [MAKER]: { role: 'teller' },
      [OUTSIDER]: { role: 'teller' },
      [CHECKER]: { role: 'finance' },
      [CHECKER2]: { role: 'finance' },
    },
  },
};

type Blocks = Array<Record<string, any>>;
interface View {
  callback_id: string;
  private_metadata: string;
  blocks: Blocks;
  submit: { text: string };
}

let fake: FakeSlack;
let running: RunningApp;
let sender: SlackSender;
let product: Product | undefined;
const log = memoryLogger('debug');
beforeAll(async () => {
  product = await startProduct(
    {
      SLACK_APPROVALS_CHANNEL: APPROVALS,
      ACCESS_POLICY: JSON.stringify(POLICY),
      // The organization allows Kenyan shillings and the test currency too: a Ugandan maker is offered UGX only.
      CURRENCIES: 'UGX,KES,BXC',
      // Authenticated notifications: each recipient's state is believed as the webhooks report it.
      MOMO_WEBHOOK_USER: WEBHOOK.user,
      MOMO_WEBHOOK_PASSWORD: WEBHOOK.password,
    },
    { logger: log.logger },
  );
  ({ fake, running, sender } = product);
});
afterAll(async () => {
  await product?.close();
});

const submitView = (
  view: { callback_id: string; private_metadata?: string },
  values: Record<string, Record<string, unknown>>,
  user: string,
) => sender.submitValues(view, values, user);

const input = (value: string) => ({ value: { type: 'plain_text_input', value } });
const values = (rows: { pasted?: string; file?: string }, currency = 'UGX') => ({
  ...(rows.pasted !== undefined ? { rows: input(rows.pasted) } : {}),
  ...(rows.file !== undefined ? { file: input(rows.file) } : {}),
  currency: {
    value: {
      type: 'static_select',
      selected_option: { text: { type: 'plain_text', text: currency }, value: currency },
    },
  },
  description: input('Wages'),
});

/** `/momo payout` as `user`: the modal views.open received. */
async function openPayout(user: string): Promise<View> {
  const answer = await sender.command('payout', { user });
  expect(answer.status).toBe(200);
  for (;;) {
    const opened = (await fake.next('views.open')).body.view;
    if (opened.callback_id === 'momo_payout') return opened;
  }
}

/** The modal's answer to rows (pasted or a file named), as Slack gets it. */
async function check(
  rows: { pasted?: string; file?: string },
  user = MAKER,
): Promise<{ response_action: string; view?: View; errors?: Record<string, string> }> {
  const modal = await openPayout(user);
  return (await submitView(modal, values(rows), user)).json() as Promise<{
    response_action: string;
    view?: View;
    errors?: Record<string, string>;
  }>;
}

/** The payout message posted in `channel` whose text matches `pattern` (so far or to come). */
const posted = (pattern: RegExp, channel = CHANNEL): Promise<Call> =>
  fake.find('chat.postMessage', (c) => c.body.channel === channel && pattern.test(textOf(c.body.blocks)));

/** The first update of the message `ts` whose whole text matches `pattern`. */
const updated = (ts: string, pattern: RegExp): Promise<Call> =>
  fake.find('chat.update', (c) => c.body.ts === ts && pattern.test(JSON.stringify(c.body.blocks)));

const tsOf = (call: Call): string => {
  const index = fake
    .of('chat.postMessage')
    .filter((c) => /^[CG]/.test(String(c.body.channel)))
    .indexOf(call);
  return `1700000100.${String(index + 1).padStart(6, '0')}`;
};

const payments = () => running.sandbox!.controls.payments();

describe('bulk payouts in Slack: pasted rows (/momo payout)', () => {
  it('refuses a paste with bad rows, naming each row, and makes nothing', async () => {
    const modal = await openPayout(MAKER);
    expect(modal.blocks.map((b) => b.block_id)).toEqual(['rows', 'file', 'currency', 'description']);
    expect(JSON.parse(modal.private_metadata)).toEqual({ channel: CHANNEL });
    const before = payments().length;
    const body = (await (
      await submitView(
        modal,
        values({ pasted: '0772000001, 5000\n0772abc, 100\n0772000002, 12.345\n0772000003' }),
        MAKER,
      )
    ).json()) as { response_action: string; errors: { rows: string } };
    expect(body.response_action).toBe('errors');
    expect(body.errors.rows).toMatch(/^Row 2: "0772abc" is not a phone number\nRow 3: .*\nRow 4: /);
    // Over the maker's per-payment limit (1000000), by row; a currency not offered; nothing given at all.
    const over = (await (
      await submitView(modal, values({ pasted: '0772000001, 5000\n0772000002, 1000001' }), MAKER)
    ).json()) as { errors: { rows: string } };
    expect(over.errors.rows).toBe('Row 2: more than your limit of 1,000,000 UGX per payment');
    const usd = (await (await submitView(modal, values({ pasted: '0772000001, 5000' }, 'USD'), MAKER)).json()) as {
      errors: { rows: string };
    };
    expect(usd.errors.rows).toMatch(/USD is not a currency/);
    // The form offers the maker's country's currency only; another sent all the same is refused.
    expect(modal.blocks[2]!.element.options.map((o: { value: string }) => o.value)).toEqual(['UGX']);
    // Its example number is one of the maker's country (Uganda here), as the conversation's are.
    expect(modal.blocks[0]!.hint.text).toMatch(/^e\.g\. 0772123456, 5000/);
    const kes = (await (await submitView(modal, values({ pasted: '0772000001, 5000' }, 'KES'), MAKER)).json()) as {
      errors: { rows: string };
    };
    expect(kes.errors.rows).toBe('KES is not a currency you may pay in here');
    const none = (await (await submitView(modal, values({ pasted: '  ' }), MAKER)).json()) as {
      errors: { rows: string };
    };
    expect(none.errors.rows).toMatch(/Paste the rows, or name a CSV file/);
    const both = (await (
      await submitView(modal, values({ pasted: '0772000001, 5000', file: 'latest' }), MAKER)
    ).json()) as { errors: { file: string } };
    expect(both.errors.file).toMatch(/not both/);
    expect(payments()).toHaveLength(before);
  });

  it("answers a member offered no currency (their role has no limits in their country's) instead of a form", async () => {
    const opened = fake.of('views.open').length;
    const answer = (await (await sender.command('payout', { user: CHECKER })).json()) as {
      response_type: string;
      text: string;
    };
    expect(answer.response_type).toBe('ephemeral');
    expect(answer.text).toMatch(/^No currency is offered to you for a payout/);
    expect(fake.of('views.open')).toHaveLength(opened);
  });

  it('summarises good rows, and on confirmation makes one request with recipient_data for them all, once, posted in the channel', async () => {
    const answer = await check({ pasted: '0772000001, 30000, March\n0772000002, 20000.50' });
    expect(answer.response_action).toBe('update');
    const view = answer.view!;
    expect(view.callback_id).toBe('momo_payout_confirm');
    expect(view.blocks[0]!.text.text).toMatch(/\*2 recipients\*, total \*50,000.50 UGX\*/);
    expect(view.blocks[0]!.text.text).toMatch(/1,000,000 UGX per payment, 5,000,000 UGX a day/);
    expect(view.submit.text).toBe('Pay');
    const before = payments().length;
    // Confirmed twice (a double click): one request.
    await Promise.all([submitView(view, {}, MAKER), submitView(view, {}, MAKER)]);
    const message = await posted(/Payout of 2 recipients, 50,000.50 UGX/);
    expect(textOf(message.body.blocks)).toMatch(
      /Request 1 \(2 recipients, 50,000.50 UGX\): sent as payment MC-\w+ \(service \d+\)/,
    );
    const made = payments().slice(before);
    expect(made).toHaveLength(1);
    expect(made[0]).toMatchObject({ currency: 'UGX', metadata: { chat: `slack:${TEAM}:${MAKER}` } });
    expect((made[0]!.phone_nos as Array<Record<string, unknown>>).map((r) => [r.phonenumber, r.amount])).toEqual([
      ['+256772000001', '30000.00'],
      ['+256772000002', '20000.50'],
    ]);
    // A confirmation of someone else's draft does nothing.
    await submitView(view, {}, CHECKER);
    expect(payments().slice(before)).toHaveLength(1);
    // +256772000002 is not registered: the message ends with one paid and one failed, by the service's words.
    const ended = await updated(tsOf(message), /Paid 1 \(30,000 UGX\) · failed 1 · waiting 0/);
    expect(JSON.stringify(ended.body.blocks)).toMatch(
      /\+256772000002: 20,000.50 UGX, Wages — failed: The phone number is not registered for mobile money/,
    );
  });

  it("holds a payout above the maker's approvalAbove for an approver, who approves it once", async () => {
    const answer = await check({ pasted: '0772000001, 80000\n0772000003, 70000, Tools' });
    expect(answer.view!.submit.text).toBe('Ask approval');
    const before = payments().length;
    await submitView(answer.view!, {}, MAKER);
    const message = await posted(/Payout of 2 recipients, 150,000 UGX/);
    expect(textOf(message.body.blocks)).toMatch(/Request 1 \(2 recipients, 150,000 UGX\): held for approval/);
    const held = await fake.find(
      'chat.postMessage',
      (c) => c.body.channel === APPROVALS && /bulk payout to 2 recipients/.test(textOf(c.body.blocks)),
    );
    expect(textOf(held.body.blocks)).toContain('+256772000003: 70,000 UGX, Tools');
    expect(payments()).toHaveLength(before);
    const approve = buttonOf(held.body.blocks, 'momo_approval_approve');
    await Promise.all([
      sender.click(approve, 'board-1', triggerId(), CHECKER),
      sender.click(approve, 'board-2', triggerId(), CHECKER2),
    ]);
    // The approved request's webhooks (made under the payout's key) update the payout's message.
    const ended = await updated(tsOf(message), /Paid 2 \(150,000 UGX\) · failed 0 · waiting 0/);
    expect(textOf(ended.body.blocks)).toMatch(/Request 1 \(2 recipients, 150,000 UGX\): approved and sent\./);
    expect(payments().slice(before)).toHaveLength(1);
    expect(payments().slice(before)[0]!.phone_nos).toHaveLength(2);
  });
});

describe('bulk payouts in Slack: a CSV file shared in the channel', () => {
  const GOOD =
    'phone,amount,description\r\n0772000001,30000,"Wages, March"\r\n0772000005,20000,"Bonus, Q1 ""top"""\r\n0772000004,10000,Transport\r\n';
  let message: Call;
  let ts: string;

  it('pays a good CSV file (the latest shared here), its quoted descriptions with commas kept', async () => {
    fake.share(CHANNEL, 'notes.txt', 'not a payout');
    fake.share('C0ELSEWHERE', 'other.csv', '0772000001,1\n');
    fake.share(CHANNEL, 'march.csv', `\uFEFF${GOOD}`);
    fake.share(CHANNEL, 'photo.png', 'png', { filetype: 'png', mimetype: 'image/png' });
    const answer = await check({ file: 'latest' });
    expect(answer.response_action).toBe('update');
    const summary = answer.view!.blocks[0]!.text.text as string;
    expect(summary).toMatch(/\*3 recipients\*, total \*60,000 UGX\*/);
    expect(summary).toContain('Rows from the file *march.csv*');
    // The file was listed for this channel and downloaded with the bot token.
    expect(fake.of('files.list').at(-1)!.body).toMatchObject({ channel: CHANNEL });
    expect(fake.of('download').at(-1)!.authorization).toBe(`Bearer ${BOT_TOKEN}`);
    const before = payments().length;
    await submitView(answer.view!, {}, MAKER);
    message = await posted(/Payout of 3 recipients, 60,000 UGX/);
    ts = tsOf(message);
    const made = payments().slice(before);
    expect(made).toHaveLength(1);
    expect(
      (made[0]!.phone_nos as Array<Record<string, unknown>>).map((r) => [r.phonenumber, r.amount, r.description]),
    ).toEqual([
      ['+256772000001', '30000.00', 'Wages, March'],
      ['+256772000005', '20000.00', 'Bonus, Q1 "top"'],
      ['+256772000004', '10000.00', 'Transport'],
    ]);
    buttonOf(message.body.blocks, 'momo_payout_csv');
  });

  it('updates the one message in place as two recipients succeed and one fails, and a redelivery does not move it back', async () => {
    // The network pays +256772000001, fails +256772000004, and queues +256772000005 for 30 s.
    const first = await updated(ts, /Paid 1 \(30,000 UGX\) · failed 1 · waiting 1/);
    const firstText = JSON.stringify(first.body.blocks);
    expect(firstText).toContain('+256772000001: 30,000 UGX, Wages, March — paid');
    expect(firstText).toContain('+256772000005: 20,000 UGX, Bonus, Q1 \\"top\\" — queued at the network');
    expect(firstText).toMatch(/\+256772000004: 10,000 UGX, Transport — failed: /);
    expect(first.body.channel).toBe(CHANNEL);
    await running.sandbox!.controls.advanceClock(31);
    const last = await updated(ts, /Paid 2 \(50,000 UGX\) · failed 1 · waiting 0/);
    expect(JSON.stringify(last.body.blocks)).toContain('+256772000005: 20,000 UGX, Bonus, Q1 \\"top\\" — paid');
    const updates = fake.of('chat.update').filter((c) => c.body.ts === ts).length;
    const dropped = () =>
      log.lines.filter(
        (l) =>
          l.msg === 'notification not told: told before, or a newer state was' &&
          String(l.key).endsWith(':recipient.queued'),
      ).length;
    const droppedBefore = dropped();
    // The service delivers the earlier notification again (queued), after the final one.
    const [payment] = payments().filter((p) => (p.phone_nos as unknown[]).length === 3);
    const earlier = running
      .sandbox!.controls.events()
      .find(
        (e) =>
          e.type === 'payment.status.changed' &&
          (e.data as any).id === payment!.id &&
          (e.data as any).phone_nos.some((r: any) => r.state === 'queued'),
      );
    expect(earlier).toBeDefined();
    const redelivered = await fetch(`${running.url}/notifications/momo`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Basic ${Buffer.from(`${WEBHOOK.user}:${WEBHOOK.password}`).toString('base64')}`,
      },
      body: JSON.stringify({
        hook: { id: 1, event: 'payment.status.changed', target: `${running.url}/notifications/momo` },
        data: earlier!.data,
      }),
    });
    expect(redelivered.status).toBe(200);
    // Told to nobody (a newer state was told), and the message not updated.
    await until('the redelivery dropped', () => dropped() > droppedBefore);
    expect(fake.of('chat.update').filter((c) => c.body.ts === ts)).toHaveLength(updates);
  });

  it("uploads the CSV of outcomes into the thread for the maker and an approver, with the Web API's upload steps", async () => {
    const button = buttonOf(message.body.blocks, 'momo_payout_csv');
    expect((await sender.click(button, 'csv-1', triggerId(), MAKER)).status).toBe(200);
    const asked = await fake.next('files.getUploadURLExternal');
    expect(asked.body.filename).toMatch(/^payout-[0-9a-f]{8}-outcomes\.csv$/);
    const upload = await fake.next('upload');
    expect(Number(asked.body.length)).toBe(Buffer.byteLength(upload.body.content));
    const id = payments().find((p) => (p.phone_nos as unknown[]).length === 3)!.id;
    const lines = upload.body.content.split('\r\n');
    expect(lines[0]).toBe('phone,amount,description,currency,status,ref,id,error');
    // One payment carries the three recipients: one short ref (ours, read out) and the service's id on each row.
    const ref = /,complete,(MC-[0-9A-Z]+),/.exec(lines[1] ?? '')?.[1];
    expect(ref).toBeDefined();
    expect(lines[1]).toBe(`+256772000001,30000,"Wages, March",UGX,complete,${ref},${id},`);
    expect(lines[2]).toBe(`+256772000005,20000,"Bonus, Q1 ""top""",UGX,complete,${ref},${id},`);
    expect(lines[3]).toMatch(new RegExp(`^\\+256772000004,10000,Transport,UGX,error,${ref},${id},\\S`));
    expect(lines.slice(4)).toEqual(['']);
    const completed = await fake.next('files.completeUploadExternal');
    expect(completed.body).toMatchObject({ channel_id: CHANNEL, thread_ts: ts, files: [{ id: upload.id }] });
    expect(completed.authorization).toBe(`Bearer ${BOT_TOKEN}`);
    // An approver may too.
    await sender.click(button, 'csv-2', triggerId(), CHECKER);
    expect((await fake.next('files.completeUploadExternal')).body).toMatchObject({
      channel_id: CHANNEL,
      thread_ts: ts,
    });
  });

  it('refuses the download, ephemerally, to a member who is neither the maker nor an approver', async () => {
    const uploads = fake.of('files.getUploadURLExternal').length;
    const ephemerals = fake.of('chat.postEphemeral').length;
    expect(
      (await sender.click(buttonOf(message.body.blocks, 'momo_payout_csv'), 'csv-3', triggerId(), OUTSIDER)).status,
    ).toBe(200);
    const refusal = await fake.find('chat.postEphemeral', (c) => c.body.user === OUTSIDER);
    expect(refusal.body).toMatchObject({ channel: CHANNEL, user: OUTSIDER });
    expect(refusal.body.text).toMatch(/Only the payout's maker and approvers/);
    // A forged button naming no payout is refused too.
    await sender.click({ action_id: 'momo_payout_csv', value: '../payout:x' }, 'csv-4', triggerId(), CHECKER);
    await fake.find('chat.postEphemeral', (c) => c.body.user === CHECKER && /not known here/.test(String(c.body.text)));
    expect(fake.of('chat.postEphemeral').length).toBe(ephemerals + 2);
    expect(fake.of('files.getUploadURLExternal')).toHaveLength(uploads);
  });

  it('refuses a CSV file with a bad row by its row number, and makes nothing', async () => {
    const bad = fake.share(
      CHANNEL,
      'april.csv',
      'phone,amount,description\n0772000001,5000,"Rent, April"\n0772abc,100,x\n0772000002,1.234\n',
    );
    const before = payments().length;
    const answer = await check({ file: `https://example.slack.com/files/${MAKER}/${bad.id}/april.csv` });
    expect(answer).toMatchObject({ response_action: 'errors' });
    expect(answer.errors!.file).toMatch(/^Row 3: "0772abc" is not a phone number\nRow 4: /);
    expect(fake.of('files.info').at(-1)!.body).toMatchObject({ file: bad.id });
    expect(payments()).toHaveLength(before);
  });

  it('refuses, with a reason and nothing made, an oversize file, a non-CSV, one of another channel or workspace, and a download that hangs', async () => {
    const before = payments().length;
    const link = (id: string, name: string) => `https://example.slack.com/files/${MAKER}/${id}/${name}`;
    const refusal = async (file: string) => (await check({ file })).errors?.file ?? '';
    // Said to be larger than 256 KB: not downloaded at all.
    const big = fake.share(CHANNEL, 'big.csv', '0772000001,1\n', { size: 300 * 1024 });
    const downloads = fake.of('download').length;
    expect(await refusal(link(big.id, 'big.csv'))).toMatch(/big\.csv is larger than 256 KB/);
    expect(fake.of('download')).toHaveLength(downloads);
    // Said to be small, but its bytes run past the limit: the download stops there.
    const lying = fake.share(CHANNEL, 'lying.csv', '0772000001,1\n'.repeat(30_000), { size: 1000 });
    expect(await refusal(link(lying.id, 'lying.csv'))).toMatch(/lying\.csv is larger than 256 KB/);
    const png = fake.share(CHANNEL, 'rows.png', 'png', { filetype: 'png', mimetype: 'image/png' });
    expect(await refusal(link(png.id, 'rows.png'))).toMatch(/rows\.png is not a CSV file/);
    const elsewhere = fake.share('C0ELSEWHERE', 'may.csv', '0772000001,1\n');
    expect(await refusal(link(elsewhere.id, 'may.csv'))).toMatch(/may\.csv is not shared in this channel/);
    expect(await refusal('https://other-company.slack.com/files/U0999/F0NOTOURS1/pay.csv')).toMatch(
      /not one the app can see/,
    );
    expect(await refusal('the march file please')).toMatch(/Type `latest`/);
    const latin1 = fake.share(
      CHANNEL,
      'latin1.csv',
      Buffer.from([0x30, 0x37, 0x37, 0x32, 0x2c, 0x31, 0x2c, 0xe9, 0x0a]),
    );
    expect(await refusal(link(latin1.id, 'latin1.csv'))).toMatch(/not UTF-8 text/);
    // A download that never answers: refused in time for Slack's 3 s, and the product goes on.
    const slow = fake.share(CHANNEL, 'slow.csv', '0772000001,1\n', { hang: true });
    const started = Date.now();
    expect(await refusal(link(slow.id, 'slow.csv'))).toMatch(/not read within 2 s/);
    expect(Date.now() - started).toBeLessThan(2900);
    // files.info failing for good (Slack down): a refusal, not a crash.
    fake.script('files.info', ...Array.from({ length: 4 }, () => ({ status: 500, body: 'upstream' })));
    const down = fake.share(CHANNEL, 'june.csv', '0772000001,1\n');
    expect(await refusal(link(down.id, 'june.csv'))).toMatch(/could not be read|not read within/);
    expect(payments()).toHaveLength(before);
    // The product still answers.
    expect((await check({ pasted: '0772000001, 100' })).response_action).toBe('update');
  });
});
