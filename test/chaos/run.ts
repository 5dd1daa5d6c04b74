/**
 * The chaos run: pay conversations over USSD (Africa's Talking) and Telegram, through TWO product instances
 * on one Redis that take a conversation's requests alternately (as behind a load balancer), against a
 * standalone sandbox on its own port, while faults are injected:
 * - the service commits a payment and its answer is dropped (at once, or after the USSD deadline), or it
 *   answers 5xx (fault proxy between the product's client and the sandbox);
 * - an instance is replaced mid-payment (stopped while conversations run, a new one started on the same Redis);
 * - inbound deliveries are duplicated (the same USSD request, the same Telegram update, to the other instance);
 * - the Redis connection is cut and restored (a TCP proxy in front of Redis).
 *
 * The simulated users behave like people: they answer what the screen asks, start over when told to, never
 * confirm a payment twice once the product acknowledged it, and look for the outcome (USSD: by dialling
 * again; Telegram: the chat message). Afterwards the sandbox's payments are counted per conversation.
 */
import { Redis } from 'ioredis';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { startApp, type RunningApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { hashPin } from '../../src/conversation/policy.js';
import { createLogger } from '../../src/log.js';
import { PENDING_TTL_SECONDS } from '../../src/conversation/records.js';
import { createSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { deriveSecretToken } from '../../adapters/telegram/webhook.js';
import { ChaosBotApi } from './bot-api.js';
import { Balancer, FaultProxy, TcpCutter, type Fault } from './proxies.js';

export interface ChaosOptions {
  conversations: number;
  /** Conversations at once. Default 16. */
  concurrency?: number;
  /** Share of conversations on Telegram (the rest USSD). Default 0.25. */
  telegramShare?: number;
  /** Redis (a dedicated database: its momo:* and bull:* keys are deleted before and after). Default redis://127.0.0.1:6379/11. */
  redisUrl?: string;
  /** Seed of the fault and user choices. Default the clock. */
  seed?: number;
  /** Milliseconds between instance replacements and between Redis cuts (they alternate). Default 4000. */
  faultEveryMs?: number;
  /** How long Redis stays cut. Default 800. */
  redisCutMs?: number;
  /** Progress lines (stderr in the CLI). */
  progress?: (line: string) => void;
  /** Product log lines at warn and above (diagnosis). */
  productLog?: (line: string) => void;
}

export interface ConversationRecord {
  channel: 'ussd' | 'telegram';
  chat: string;
  confirmed: boolean;
  told: boolean;
  /** When the final confirmation was acknowledged, and when the user last looked for the outcome (ms). */
  confirmedAt?: number;
  lastLookAt?: number;
  restarts: number;
  /** What the product answered to the final confirmation (class). */
  ack?: string;
  /** Texts seen after the confirmation (diagnosis). */
  trail: string[];
}

export interface ChaosResult {
  conversations: number;
  confirmed: number;
  payments: number;
  duplicates: number;
  lost: number;
  told: number;
  ok: boolean;
  line: string;
  records: ConversationRecord[];
  faults: Record<string, number>;
  problems: string[];
}

const API_KEY = 'chaos-key';
const BOT_TOKEN = '424242:CHAOS-token';
const WEBHOOK_USER = 'chaos-service';
const WEBHOOK_PASSWORD = 'chaos-webhook-password';
const PAYEE = '0772000001';
const OUTCOME = /Done: .* reached|failed: |was rejected|was cancelled/;
/** A notification about a payment: the user knows it exists. */
const PAYMENT_NEWS = /^Payment \d+ of |^Done: /;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** mulberry32: small seeded PRNG. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** What a person does with a screen. */
type Decision =
  | { kind: 'choose'; label: RegExp; final?: boolean }
  | { kind: 'text'; value: string; final?: boolean }
  | { kind: 'unknown' };

function decide(text: string, channel: 'ussd' | 'telegram', who: { first: string; last: string; amount: string }): Decision {
  if (/What do you want to send\?/.test(text)) return { kind: 'choose', label: /^Mobile money$/ };
  if (/What would you like to do\?/.test(text)) return { kind: 'choose', label: /^Pay someone$/ };
  if (/phone number of the person to pay/.test(text)) return { kind: 'text', value: PAYEE };
  if (/first name of its owner/.test(text)) return { kind: 'text', value: who.first };
  if (/Enter the last name/.test(text)) return { kind: 'text', value: who.last };
  if (/Enter the amount/.test(text)) return { kind: 'text', value: who.amount };
  if (/Choose the currency/.test(text)) return { kind: 'choose', label: /^UGX$/ };
  if (/Enter a description/.test(text)) return { kind: 'text', value: 'chaos lunch' };
  if (/The network knows this number as/.test(text)) return { kind: 'choose', label: /^Yes, pay$/ };
  if (/of mobile money to/.test(text)) return { kind: 'choose', label: /^Confirm$/, final: channel === 'telegram' };
  if (/Enter your PIN/.test(text)) return { kind: 'text', value: '1234', final: true };
  return { kind: 'unknown' };
}

/** How the answer to the final confirmation reads: the payment is under way (ack), or the user should start over. */
function classify(text: string): 'ack' | 'retry' {
  if (/submitted|still working on it|may or may not have been made|taking longer than expected|Dial again shortly/i.test(text)) return 'ack';
  return 'retry';
}

/** The USSD gateway's callback token (USSD_CALLBACK_TOKEN): the instances run in production mode. */
const CALLBACK_TOKEN = 'chaos-callback-token-0123456789';

interface Slot {
  app?: RunningApp;
  port?: number;
}

export async function runChaos(options: ChaosOptions): Promise<ChaosResult> {
  const n = options.conversations;
  const concurrency = options.concurrency ?? 16;
  const seed = options.seed ?? Date.now() % 1_000_000;
  const random = prng(seed);
  const progress = options.progress ?? (() => {});
  const redisUrl = new URL(options.redisUrl ?? 'redis://127.0.0.1:6379/11');
  const db = redisUrl.pathname.replace('/', '') || '0';
  if (db === '0') throw new Error('chaos: use a dedicated Redis database, not 0');
  const problems: string[] = [];
  const faults: Record<string, number> = { duplicateDeliveries: 0, replacements: 0, redisCuts: 0, instanceRefused: 0 };

  const redis = new Redis(redisUrl.toString());
  const cleanRedis = async () => {
    for (const pattern of ['momo:*', 'bull:momo-notifications:*']) {
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
        if (keys.length > 0) await redis.del(...keys);
        cursor = next;
      } while (cursor !== '0');
    }
  };
  await cleanRedis();

  // The standalone sandbox on its own port.
  const sandbox: Sandbox = createSandbox({
    apiKey: API_KEY,
    allowHttpWebhooks: true,
    autoAdvance: true,
    limits: { readsPerMinute: 1_000_000, writesPerMinute: 1_000_000 },
    logger: createLogger('silent'),
  });
  // Notifications carry Basic auth, as in a production set up with the operator: the products believe a
  // notification's state without spending a read of the 30 a minute on each outcome.
  sandbox.controls.setOrganization({ webhookAuth: { username: WEBHOOK_USER, password: WEBHOOK_PASSWORD } });
  const sandboxServer: Server = await new Promise((resolve) => {
    const s = sandbox.app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const sandboxPort = (sandboxServer.address() as AddressInfo).port;

  const chooseFault = (method: string, path: string): Fault => {
    const r = random();
    if (method === 'POST' && path === '/api/payments') {
      if (r < 0.1) return 'drop-after-commit';
      if (r < 0.15) return 'slow-drop-after-commit';
      if (r < 0.25) return '5xx';
      if (r < 0.3) return '5xx-after-commit';
      return 'none';
    }
    if (r < 0.03) return '5xx';
    return 'none';
  };
  const faultProxy = await new FaultProxy(sandboxPort, chooseFault).start();
  const redisPort = Number(redisUrl.port || 6379);
  const cutter = await new TcpCutter({ host: redisUrl.hostname, port: redisPort }).start();
  const bot = await new ChaosBotApi().start();
  const slots: Slot[] = [{}, {}];
  const livePorts = () => slots.filter((s) => s.app && s.port).map((s) => s.port!);
  const balancer = await new Balancer(livePorts).start();

  const productLogger = createLogger(process.env.CHAOS_LOG_LEVEL ?? 'warn', { write: (line: string) => options.productLog?.(line) });
  // Production mode: a policy naming each USSD caller with their PIN (a * entry carries none), any Telegram
  // user allowed to pay (opted in), and the gateway's callback token.
  const base = 100000 + (seed % 800000);
  const ussdPhone = (i: number) => `+256701${String((base + i) % 1_000_000).padStart(6, '0')}`;
  const pin = hashPin('1234');
  const payer = { flows: ['pay'], perPaymentLimit: { UGX: '1000000' }, dailyLimit: { UGX: '10000000' } };
  const policy = {
    roles: { payer },
    users: { telegram: { '*': { role: 'payer' } }, slack: {}, ussd: Object.fromEntries(Array.from({ length: n }, (_, i) => [ussdPhone(i), { role: 'payer', pin }])) },
  };
  const env = {
    PORT: '0',
    LOG_LEVEL: 'warn',
    MOMO_BASE_URL: `http://127.0.0.1:${faultProxy.port}`,
    MOMO_API_KEY: API_KEY,
    REDIS_URL: `redis://127.0.0.1:${cutter.port}/${db}`,
    PUBLIC_URL: `http://127.0.0.1:${balancer.port}`,
    MOMO_WEBHOOK_USER: WEBHOOK_USER,
    MOMO_WEBHOOK_PASSWORD: WEBHOOK_PASSWORD,
    TELEGRAM_BOT_TOKEN: BOT_TOKEN,
    TELEGRAM_API_ROOT: bot.apiRoot,
    ACCESS_POLICY: JSON.stringify(policy),
    ALLOW_ANY_USER_MONEY: 'true',
    USSD_CALLBACK_TOKEN: CALLBACK_TOKEN,
    // One client plays every gateway and Telegram from one address.
    SOURCE_RATE_LIMIT_REQUESTS: '1000000',
  };
  const startInstance = async (slot: Slot) => {
    // Registration lists webhooks: keep the proxy's faults off it so every instance starts.
    const app = await startApp(loadConfig(env), { logger: productLogger });
    slot.app = app;
    slot.port = Number(new URL(app.url).port);
  };
  faultProxy.enabled = false;
  await startInstance(slots[0]!);
  await startInstance(slots[1]!);
  faultProxy.enabled = true;
  const secret = deriveSecretToken(BOT_TOKEN);

  /** The instance for a conversation's request number `hop`: alternately; a down one is skipped. */
  const portFor = (hop: number): number | undefined => slots[hop % 2]!.port ?? slots[(hop + 1) % 2]!.port;

  async function post(hop: number, path: string, init: RequestInit): Promise<Response> {
    const deadline = Date.now() + 20_000;
    let lastError: unknown;
    for (let i = 0; Date.now() < deadline; i++) {
      const port = portFor(hop + i);
      if (port === undefined) {
        await sleep(100);
        continue;
      }
      try {
        return await fetch(`http://127.0.0.1:${port}${path}`, { ...init, signal: AbortSignal.timeout(15_000) });
      } catch (error) {
        lastError = error;
        faults.instanceRefused!++;
        await sleep(50);
      }
    }
    throw new Error(`no instance answered ${path}: ${String(lastError)}`);
  }

  /** A request, sometimes delivered twice (to the other instance too, at once or after the first answer). */
  async function deliver(hop: number, path: string, init: () => RequestInit, read: (res: Response) => Promise<string>): Promise<string> {
    const r = random();
    if (r < 0.05) {
      faults.duplicateDeliveries!++;
      const [first] = await Promise.all([post(hop, path, init()).then(read), post(hop + 1, path, init()).then(read).catch(() => '')]);
      return first;
    }
    const first = await read(await post(hop, path, init()));
    if (r < 0.1) {
      faults.duplicateDeliveries!++;
      const again = await post(hop + 1, path, init()).then(read).catch(() => undefined);
      if (again !== undefined && path.startsWith('/ussd') && again !== first) problems.push(`a resent USSD request got another screen: ${JSON.stringify([first, again])}`);
    }
    return first;
  }

  // ---------------------------------------------------------------- USSD users

  const ussdChoice = (screen: string, label: RegExp): string | undefined => {
    for (const line of screen.split('\n')) {
      const m = /^(\d+)\.\s+(.*)$/.exec(line.trim());
      if (m && label.test(m[2]!.trim())) return m[1];
    }
    return undefined;
  };

  async function ussdConversation(i: number, record: ConversationRecord, who: { first: string; last: string; amount: string }): Promise<void> {
    const phone = record.chat.slice('ussd:'.length);
    let sessions = 0;
    const session = () => {
      const sessionId = `chaos-${seed}-${i}-${sessions++}`;
      const answers: string[] = [];
      let hop = i + sessions;
      const send = () => {
        const body = new URLSearchParams({ sessionId, serviceCode: '*384*123#', phoneNumber: phone, networkCode: '63902', text: answers.join('*') }).toString();
        return deliver(
          hop++,
          `/ussd/africastalking/${CALLBACK_TOKEN}`,
          () => ({ method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body }),
          async (res) => {
            const text = await res.text();
            if (res.status !== 200) throw new Error(`USSD ${res.status}: ${text}`);
            return text;
          },
        );
      };
      return { dial: send, answer: (a: string) => (answers.push(a), send()) };
    };
    const lookForOutcome = (screen: string) => {
      record.lastLookAt = Date.now();
      if (OUTCOME.test(screen)) record.told = true;
    };

    for (let attempt = 0; attempt < 6 && !record.confirmed; attempt++) {
      if (attempt > 0) record.restarts++;
      const s = session();
      let screen = await s.dial();
      if (record.restarts > 0) lookForOutcome(screen);
      for (let step = 0; step < 20; step++) {
        if (screen.startsWith('END ')) break;
        const d = decide(screen, 'ussd', who);
        if (d.kind === 'unknown') break;
        const answer = d.kind === 'text' ? d.value : ussdChoice(screen, d.label);
        if (answer === undefined) break;
        screen = await s.answer(answer);
        if (d.final) {
          record.ack = classify(screen);
          record.trail.push(screen);
          if (record.ack === 'ack') [record.confirmed, record.confirmedAt] = [true, Date.now()];
          break;
        }
      }
      if (!record.confirmed) await sleep(200);
    }
    if (!record.confirmed) return;
    // Dial again until the outcome shows (USSD keeps it for the next dial).
    for (let t = 0; t < 40 && !record.told; t++) {
      await sleep(750);
      const screen = await session().dial();
      record.trail.push(screen);
      lookForOutcome(screen);
    }
  }

  // ---------------------------------------------------------------- Telegram users

  let updateId = 1;
  async function telegramConversation(i: number, record: ConversationRecord, who: { first: string; last: string; amount: string }): Promise<void> {
    const chatId = Number(record.chat.slice('telegram:'.length));
    const from = { id: chatId, is_bot: false, first_name: 'Chaos' };
    const chat = { id: chatId, type: 'private' as const, first_name: 'Chaos' };
    let hop = i;
    const send = (update: Record<string, unknown>) =>
      deliver(
        hop++,
        '/telegram/webhook',
        () => ({
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': secret },
          body: JSON.stringify(update),
        }),
        async (res) => {
          await res.text();
          if (res.status !== 200) throw new Error(`telegram webhook ${res.status}`);
          return '';
        },
      );
    const typed = (text: string) => send({ update_id: updateId++, message: { message_id: updateId, date: 1, chat, from, text } });
    const press = (messageId: number, data: string) =>
      send({
        update_id: updateId++,
        callback_query: { id: `q${updateId}`, from, chat_instance: 'ci', data, message: { message_id: messageId, date: 1, chat, text: '...' } },
      });
    const lookForOutcome = () => {
      record.lastLookAt = Date.now();
      if (bot.chat(chatId).texts.some((t) => OUTCOME.test(t))) record.told = true;
    };

    for (let attempt = 0; attempt < 6 && !record.confirmed; attempt++) {
      if (attempt > 0) record.restarts++;
      await typed('/pay');
      for (let step = 0; step < 20; step++) {
        const shown = bot.latest(chatId);
        if (!shown) break;
        const d = decide(shown.text, 'telegram', who);
        if (d.kind === 'unknown') break;
        const before = shown.seq;
        const textsBefore = bot.chat(chatId).texts.length;
        if (d.kind === 'text') await typed(d.value);
        else {
          const button = shown.buttons.find(([label]) => d.label.test(label));
          if (!button) break;
          await press(shown.messageId, button[1]);
        }
        if (d.final) {
          // The answer is the edit of the pressed message; a notification of the payment may come first.
          const after = bot.latest(chatId);
          const answers = bot.chat(chatId).texts.slice(textsBefore);
          record.ack = answers.length === 0 || !after || after.seq <= before ? 'none' : answers.some((t) => classify(t) === 'ack' || PAYMENT_NEWS.test(t)) ? 'ack' : 'retry';
          record.trail.push(...answers);
          if (record.ack === 'ack') [record.confirmed, record.confirmedAt] = [true, Date.now()];
          break;
        }
      }
      if (!record.confirmed) await sleep(200);
    }
    if (!record.confirmed) return;
    for (let t = 0; t < 60 && !record.told; t++) {
      lookForOutcome();
      if (!record.told) await sleep(500);
    }
  }

  // ---------------------------------------------------------------- faults over time

  let running = true;
  const chaosLoop = (async () => {
    let turn = 0;
    while (running) {
      await sleep(options.faultEveryMs ?? 4000);
      if (!running) break;
      // A Redis cut first (it takes under a second; a replacement waits for the old instance to finish),
      // so a short run still sees both faults.
      if (turn++ % 2 === 1) {
        // Replace an instance mid-payment: stop it (it finishes what it holds), start a new one on the same Redis.
        const slot = slots[turn % 4 < 2 ? 0 : 1]!;
        const old = slot.app;
        slot.app = undefined;
        slot.port = undefined;
        faults.replacements!++;
        progress(`chaos: replacing an instance`);
        try {
          await old?.stop();
        } catch (error) {
          problems.push(`instance stop failed: ${String(error)}`);
        }
        await startInstance(slot).catch((error: unknown) => problems.push(`instance start failed: ${String(error)}`));
      } else {
        faults.redisCuts!++;
        progress(`chaos: cutting Redis`);
        cutter.cut();
        await sleep(options.redisCutMs ?? 800);
        cutter.restore();
      }
    }
  })();

  // ---------------------------------------------------------------- the conversations

  const records: ConversationRecord[] = [];
  for (let i = 0; i < n; i++) {
    const telegram = random() < (options.telegramShare ?? 0.25);
    records.push({
      channel: telegram ? 'telegram' : 'ussd',
      chat: telegram ? `telegram:${7_000_000_000 + base * 1000 + i}` : `ussd:${ussdPhone(i)}`,
      confirmed: false,
      told: false,
      restarts: 0,
      trail: [],
    });
  }
  let next = 0;
  let finished = 0;
  const started = Date.now();
  const worker = async () => {
    while (next < n) {
      const i = next++;
      const record = records[i]!;
      const who = { first: 'Sarah', last: 'Nakato', amount: String(1000 + Math.floor(random() * 40) * 100) };
      try {
        if (record.channel === 'ussd') await ussdConversation(i, record, who);
        else await telegramConversation(i, record, who);
      } catch (error) {
        problems.push(`conversation ${i} (${record.channel}) broke off: ${String(error)}`);
      }
      finished++;
      if (finished % 25 === 0) progress(`chaos: ${finished}/${n} conversations (${Math.round((Date.now() - started) / 1000)} s)`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, worker));
  running = false;
  await chaosLoop;

  // ---------------------------------------------------------------- the count

  const byChat = new Map<string, Set<string>>();
  for (const p of sandbox.controls.payments()) {
    const metadata = (p as { metadata?: Record<string, string> | null }).metadata ?? {};
    if (!metadata.chat) continue;
    const ids = byChat.get(metadata.chat) ?? new Set<string>();
    ids.add(String((p as { id: number }).id));
    byChat.set(metadata.chat, ids);
  }
  let confirmed = 0;
  let payments = 0;
  let duplicates = 0;
  let lost = 0;
  let told = 0;
  for (const r of records) {
    const made = byChat.get(r.chat)?.size ?? 0;
    payments += made;
    if (made > 1) duplicates++;
    if (r.confirmed) {
      confirmed++;
      if (made === 0) lost++;
      if (r.told) told++;
    } else if (made > 0) {
      problems.push(`${r.chat}: ${made} payment(s) but the user was never acknowledged (${r.ack ?? 'no confirmation'}): ${JSON.stringify(r.trail)}`);
    }
    if (made > 1) problems.push(`${r.chat}: ${made} payments; trail ${JSON.stringify(r.trail)}`);
    if (r.confirmed && made === 0) problems.push(`${r.chat}: confirmed without a payment; trail ${JSON.stringify(r.trail)}`);
    if (r.confirmed && !r.told) {
      const ids = byChat.get(r.chat) ?? new Set<string>();
      const events = new Set(
        sandbox.controls
          .events()
          .filter((e) => ids.has(String((e as { data?: { id?: number } }).data?.id)))
          .map((e) => (e as { id: number }).id),
      );
      const deliveries = sandbox.controls
        .deliveries()
        .filter((d) => events.has(d.event))
        .map((d) => `${d.event_type}#${d.event} attempt ${d.attempt}: ${d.status ?? d.error} ${d.outcome}`);
      // Where the outcome stopped: still waiting for the next dial, or marked told (shown, or dropped).
      // Each key with how long ago it was last written (from its remaining TTL; marks keep 14 days).
      const written = async (key: string, ttlSeconds: number) => {
        const [value, pttl] = await Promise.all([redis.get(key), redis.pttl(key)]);
        return `${key}=${value} written ${pttl < 0 ? '?' : ((ttlSeconds * 1000 - pttl) / 1000).toFixed(1)} s ago`;
      };
      const marks = await Promise.all(
        [...ids].flatMap((id) => [`momo:notify:rank:payment:${id}`, `momo:notify:sent:payment:${id}:processed`]).map((k) => written(k, 14 * 24 * 3600)),
      );
      const pending = r.channel === 'ussd' ? await written(`momo:pending:${r.chat}`, PENDING_TTL_SECONDS) : null;
      const since = (at?: number) => (at ? `${((Date.now() - at) / 1000).toFixed(1)} s ago` : '?');
      const shown = [...new Set(r.trail.slice(1))].map((t) => t.slice(0, 80));
      problems.push(
        `${r.chat}: confirmed ${since(r.confirmedAt)}, never told (last look ${since(r.lastLookAt)}); trail ${JSON.stringify(r.trail.slice(0, 2))}, then ${r.trail.length - 1} screens: ${JSON.stringify(shown)}; ` +
          `deliveries ${JSON.stringify(deliveries)}; marks ${JSON.stringify(marks)}; pending ${JSON.stringify(pending)}`,
      );
    }
  }
  if (told < confirmed) {
    // The notification queue as the run ends: a notification not told yet waits here, or failed.
    const q = 'bull:momo-notifications';
    const [wait, active, delayed, failed] = await Promise.all([redis.llen(`${q}:wait`), redis.llen(`${q}:active`), redis.zcard(`${q}:delayed`), redis.zcard(`${q}:failed`)]);
    const activeIds = await redis.lrange(`${q}:active`, 0, 9);
    const locks = await Promise.all(activeIds.map(async (id) => `${id}: lock ${await redis.pttl(`${q}:${id}:lock`)} ms, stalled ${await redis.hget(`${q}:${id}`, 'stc')}`));
    problems.push(`notification queue at the end: wait ${wait}, active ${active} [${locks.join('; ')}], delayed ${delayed}, failed ${failed}`);
  }
  Object.assign(faults, faultProxy.counts, { redisCutsReal: cutter.cuts });

  // ---------------------------------------------------------------- teardown

  for (const slot of slots) await slot.app?.stop().catch((error: unknown) => problems.push(`stop: ${String(error)}`));
  await balancer.close();
  await faultProxy.close();
  await bot.close();
  await cutter.close();
  sandboxServer.closeAllConnections();
  await new Promise<void>((resolve) => sandboxServer.close(() => resolve()));
  await sandbox.close();
  await cleanRedis();
  await redis.quit();

  const line = `chaos: conversations=${n} confirmed=${confirmed} payments=${payments} duplicates=${duplicates} lost=${lost} told=${told}`;
  const ok = payments === confirmed && duplicates === 0 && lost === 0 && told === confirmed;
  return { conversations: n, confirmed, payments, duplicates, lost, told, ok, line, records, faults, problems };
}
