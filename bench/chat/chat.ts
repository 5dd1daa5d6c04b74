/**
 * Chat depth: the cost of one Telegram update at conversation depth 2, 10 and 20.
 *
 * Ours: the real engine (memory store) behind the real Telegram adapter, updates fed with grammY
 * `bot.handleUpdate`, Bot API calls answered in-process by an API transformer.
 * Peer: the same question-and-answer conversation written with @grammyjs/conversations, which replays every
 * earlier update of the conversation on each new one; its bot gets an in-process `client.fetch` (the plugin
 * builds its own Api object from the bot's client options, so a transformer on bot.api would not reach it).
 *
 * Each conversation is a fresh chat: update 1 opens it, update k answers question k-1 ("depth k").
 * Updates are handled one at a time; wall time (performance.now) and CPU time (process.cpuUsage, user +
 * system) are taken around each handleUpdate. Both sides run in this one process, interleaved in rounds
 * after a warm-up; medians over every conversation are reported.
 */
import { conversations, createConversation, type Conversation, type ConversationFlavor } from '@grammyjs/conversations';
import { Bot, type Context, type Transformer } from 'grammy';
import type { Update, UserFromGetMe } from 'grammy/types';
import { performance } from 'node:perf_hooks';
import { createTelegram } from '../../adapters/telegram/index.js';
import { createEngine } from '../../src/conversation/engine/engine.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { loadAccessPolicy } from '../../src/conversation/calls/access-policy.js';
import { createLogger } from '../../src/log.js';
import { qaFlow, QUESTIONS } from './qa.machine.js';
import { channelCapabilities } from '../../adapters/capabilities.js';

export const DEPTHS = [2, 10, 20] as const;
const MAX_DEPTH = Math.max(...DEPTHS);
if (MAX_DEPTH >= QUESTIONS) throw new Error('the conversation must be longer than the deepest depth measured');

const botInfo: UserFromGetMe = {
  id: 42,
  is_bot: true,
  first_name: 'Bench',
  username: 'bench_bot',
  can_join_groups: true,
  can_read_all_group_messages: false,
  supports_inline_queries: false,
  can_connect_to_business: false,
  has_main_web_app: false,
  has_topics_enabled: false,
} as UserFromGetMe;

let messageIds = 1000;
/** What the Bot API would answer (a sent or edited message; true for the rest). */
function answer(method: string, payload: Record<string, unknown>): unknown {
  if (method === 'sendMessage' || method === 'editMessageText') {
    return {
      message_id: method === 'sendMessage' ? ++messageIds : Number(payload.message_id),
      date: 1_700_000_000,
      chat: { id: Number(payload.chat_id), type: 'private', first_name: 'U' },
      from: { id: botInfo.id, is_bot: true, first_name: botInfo.first_name },
      text: String(payload.text ?? ''),
    };
  }
  return true;
}

/** Ours: Bot API calls answered by a transformer. Counts the texts sent so the run can check itself. */
function answeringTransformer(sent: string[]): Transformer {
  return async (_prev, method, payload) => {
    const p = payload as Record<string, unknown>;
    if (typeof p.text === 'string') sent.push(p.text);
    return { ok: true, result: answer(method, p) } as never;
  };
}

/** Peer: the same answers through a fetch (the body is the JSON payload grammY sends). */
function answeringFetch(sent: string[]): typeof fetch {
  return (async (url: string | URL, init?: { body?: unknown }) => {
    const method = String(url).split('/').pop()!;
    const payload = typeof init?.body === 'string' ? (JSON.parse(init.body) as Record<string, unknown>) : {};
    if (typeof payload.text === 'string') sent.push(payload.text);
    return new Response(JSON.stringify({ ok: true, result: answer(method, payload) }), {
      headers: { 'content-type': 'application/json' },
    });
  }) as typeof fetch;
}

let updateIds = 1;
function message(chatId: number, text: string): Update {
  const update_id = updateIds++;
  return {
    update_id,
    message: {
      message_id: update_id,
      date: 1_700_000_000,
      chat: { id: chatId, type: 'private', first_name: 'U' },
      from: { id: chatId, is_bot: false, first_name: 'U' },
      text,
      ...(text.startsWith('/') ? { entities: [{ type: 'bot_command', offset: 0, length: text.length }] } : {}),
    },
  } as Update;
}

interface Side {
  name: 'ours' | 'peer';
  bot: Bot<never>;
  /** Update 1 of a conversation. */
  opener: string;
  sent: string[];
  close(): Promise<void>;
}

function oursSide(): Side {
  const store = new MemoryStore();
  const logger = createLogger('silent');
  const engine = createEngine({
    store,
    channels: channelCapabilities,
    services: {},
    policy: loadAccessPolicy(),
    flows: { menu: qaFlow },
    defaultCountry: 'UG',
    currencies: ['UGX'],
    sessionTtlSeconds: 3600,
    deadlineMs: { ussd: 3000, telegram: 2500, slack: 2500 },
    logger,
  });
  // With a public URL the adapter runs as for a webhook: handleUpdate resolves once the update was handled
  // (without one it detaches for long polling and returns at once, which would time nothing). Nothing is
  // contacted: the webhook is only set by start(), which the benchmark never calls.
  const telegram = createTelegram({
    token: '42:bench',
    engine,
    store,
    botInfo,
    logger,
    publicUrl: 'https://bench.invalid',
  });
  const sent: string[] = [];
  telegram.bot.api.config.use(answeringTransformer(sent));
  return { name: 'ours', bot: telegram.bot as unknown as Bot<never>, opener: 'hi', sent, close: () => telegram.stop() };
}

type PeerContext = ConversationFlavor<Context>;

function peerSide(): Side {
  const sent: string[] = [];
  const bot = new Bot<PeerContext>('42:bench', { botInfo, client: { fetch: answeringFetch(sent) as never } });
  bot.api.config.use(answeringTransformer(sent));
  async function qa(conversation: Conversation<PeerContext, Context>, ctx: Context): Promise<void> {
    const answers: string[] = [];
    for (let n = 1; n <= QUESTIONS; n++) {
      await ctx.reply(`Question ${n}?`);
      ctx = await conversation.waitFor('message:text');
      answers.push(ctx.message!.text!);
    }
    await ctx.reply(`Thanks, ${answers.length} answers.`);
  }
  bot.use(conversations());
  bot.use(createConversation(qa, 'qa'));
  bot.command('start', (ctx) => ctx.conversation.enter('qa'));
  return { name: 'peer', bot: bot as unknown as Bot<never>, opener: '/start', sent, close: async () => undefined };
}

export interface DepthFigures {
  /** Median wall time of one update, ms. */
  wallMs: number;
  /** Median CPU time of one update, ms. */
  cpuMs: number;
  /** Mean wall and CPU, ms. */
  meanWallMs: number;
  meanCpuMs: number;
  samples: number;
}

export interface ChatResult {
  conversations: number;
  depths: number[];
  ours: Record<string, DepthFigures>;
  peer: Record<string, DepthFigures>;
  /** Every update got the reply it should have (question k+1 after answer k). */
  checked: { ours: boolean; peer: boolean };
}

let chats = 10_000_000;

/** Walks `count` conversations to MAX_DEPTH; per depth the wall and CPU microseconds of each update. */
async function walk(side: Side, count: number): Promise<{ wall: number[][]; cpu: number[][]; ok: boolean }> {
  const wall: number[][] = Array.from({ length: MAX_DEPTH + 1 }, () => []);
  const cpu: number[][] = Array.from({ length: MAX_DEPTH + 1 }, () => []);
  let ok = true;
  for (let c = 0; c < count; c++) {
    const chat = chats++;
    for (let depth = 1; depth <= MAX_DEPTH; depth++) {
      const update = message(chat, depth === 1 ? side.opener : `answer ${depth - 1}`);
      side.sent.length = 0;
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      await side.bot.handleUpdate(update);
      const t1 = performance.now();
      const c1 = process.cpuUsage(c0);
      wall[depth]!.push((t1 - t0) * 1000);
      cpu[depth]!.push(c1.user + c1.system);
      if (side.sent.at(-1) !== `Question ${depth}?`) {
        if (ok && process.env.BENCH_DEBUG) console.error(side.name, 'depth', depth, 'sent', side.sent);
        ok = false;
      }
    }
  }
  return { wall, cpu, ok };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const ms = (us: number) => Math.round(us) / 1000;

export async function runChatBench(quick: boolean, log: (line: string) => void = () => undefined): Promise<ChatResult> {
  const sides = [oursSide(), peerSide()];
  const perRound = quick ? 15 : 200;
  const rounds = 3;
  try {
    for (const side of sides) await walk(side, quick ? 5 : 50); // warm-up (JIT)
    const all = new Map(sides.map((s) => [s.name, { wall: [] as number[][][], cpu: [] as number[][][], ok: true }]));
    for (let round = 0; round < rounds; round++) {
      for (const side of sides) {
        const r = await walk(side, perRound);
        const acc = all.get(side.name)!;
        acc.wall.push(r.wall);
        acc.cpu.push(r.cpu);
        acc.ok &&= r.ok;
        log(
          `chat round ${round + 1} ${side.name}: depth 2 ${ms(median(r.wall[2]!))} ms, depth 20 ${ms(median(r.wall[20]!))} ms${r.ok ? '' : ' (WRONG replies)'}`,
        );
      }
    }
    const figures = (name: 'ours' | 'peer') => {
      const acc = all.get(name)!;
      const out: Record<string, DepthFigures> = {};
      for (const depth of DEPTHS) {
        const wall = acc.wall.flatMap((w) => w[depth]!);
        const cpu = acc.cpu.flatMap((c) => c[depth]!);
        out[String(depth)] = {
          wallMs: ms(median(wall)),
          cpuMs: ms(median(cpu)),
          meanWallMs: ms(mean(wall)),
          meanCpuMs: ms(mean(cpu)),
          samples: wall.length,
        };
      }
      return out;
    };
    return {
      conversations: perRound * rounds,
      depths: [...DEPTHS],
      ours: figures('ours'),
      peer: figures('peer'),
      checked: { ours: all.get('ours')!.ok, peer: all.get('peer')!.ok },
    };
  } finally {
    for (const side of sides) await side.close();
  }
}
