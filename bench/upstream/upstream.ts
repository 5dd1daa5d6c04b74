/**
 * Upstream budget: how many reads each flow sends the service per completed conversation, and the 429s
 * seen when 200 simulated users talk at once.
 *
 * The real engine, services (src/conversation createFlowCalls) and MomoClient run against the sandbox
 * (src/sandbox createSandbox, the spec's limits: 30 reads and 3000 writes a minute) over localhost HTTP.
 * Counted at the sandbox, by a middleware in front of it: main-API reads (GET/HEAD under /api, the ones the
 * 30-a-minute limit counts), writes, vending-group calls, and 429 answers.
 * A scripted user answers whatever the flow asks (phone, amount, text, PIN) and picks the choice that
 * moves forward, until a final screen.
 */
import express from 'express';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createEngine } from '../../src/conversation/engine/engine.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { loadAccessPolicy } from '../../src/conversation/calls/access-policy.js';
import { createFlowCalls } from '../../src/conversation/calls/flow-calls.js';
import type { Inbound, Prompt } from '../../src/conversation/types.js';
import { createLogger } from '../../src/log.js';
import { MomoClient } from '../../src/momo/index.js';
import { createSandbox } from '../../src/sandbox/index.js';
import type { FlowId } from '../../flows/types.js';
import { channelCapabilities } from '../../adapters/capabilities.js';

export const FLOWS: FlowId[] = ['pay', 'request', 'check', 'data', 'pin'];

interface Counts {
  reads: number;
  writes: number;
  vending: number;
  throttled: number;
}

const zero = (): Counts => ({ reads: 0, writes: 0, vending: 0, throttled: 0 });

/** Choice ids that go back or leave: the scripted user avoids them while another choice is offered. */
const AWAY = /^(back|cancel|home|no|menu|other|more|edit|change|retry|again)/i;

/** What the scripted user answers to a prompt. */
function reply(prompt: Prompt, flow: FlowId, step: number): Pick<Inbound, 'text' | 'choice'> {
  if (prompt.choices?.length) {
    const forward =
      prompt.choices.find((c) => /^(confirm|yes|send|pay|ok|accept|mobile|money|buy)/i.test(c.id)) ??
      prompt.choices.find((c) => !AWAY.test(c.id)) ??
      prompt.choices[0]!;
    return { choice: forward.id };
  }
  switch (prompt.input) {
    case 'phone':
      return { text: '0772123456' };
    case 'amount':
      return { text: flow === 'pin' || flow === 'data' ? '1' : '5000' };
    case 'pin':
      return { text: '1234' };
    case 'code':
      return { text: '1234567890' };
    default:
      return { text: /reason|description|what/i.test(prompt.text) ? 'Lunch' : step % 2 ? 'Lunch' : 'bench' };
  }
}

export interface Transcript {
  flow: FlowId;
  completed: boolean;
  steps: number;
  screens: string[];
}

async function converse(
  engine: ReturnType<typeof createEngine>,
  flow: FlowId,
  user: string,
  channel: 'telegram' | 'ussd',
): Promise<Transcript> {
  let message = 0;
  const base = {
    channel,
    conversationId: user,
    userId: user,
    ...(channel === 'ussd' ? { phoneNumber: user } : {}),
  } as const;
  const screens: string[] = [];
  let prompt = await engine.handle({ ...base, messageId: `${user}:${message++}`, start: flow });
  screens.push(prompt.text);
  for (let step = 0; step < 25 && !prompt.final; step++) {
    prompt = await engine.handle({ ...base, messageId: `${user}:${message++}`, ...reply(prompt, flow, step) });
    screens.push(prompt.text);
    // The same screen three times: the scripted user is stuck (the flow refuses its answers); give up.
    if (screens.length >= 3 && screens.slice(-3).every((s) => s === prompt.text)) break;
  }
  await engine.drain();
  return { flow, completed: prompt.final, steps: message, screens };
}

export interface UpstreamResult {
  /** Per flow, one conversation at a time: counts per completed conversation. */
  perFlow: Record<string, Counts & { conversations: number; completed: number; lastScreen: string }>;
  /** Users talking at once. */
  concurrent: {
    users: number;
    flows: FlowId[];
    completed: number;
    throttled: number;
    reads: number;
    writes: number;
    seconds: number;
  };
}

async function listen(app: express.Express): Promise<{ server: Server; url: string }> {
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

export async function runUpstreamBench(
  quick: boolean,
  log: (line: string) => void = () => undefined,
): Promise<UpstreamResult> {
  const logger = createLogger('silent');
  const sandbox = createSandbox({ logger, allowHttpWebhooks: true });
  let counts = zero();
  const app = express();
  app.use((req, res, next) => {
    const main = req.path.startsWith('/api/');
    if (main && (req.method === 'GET' || req.method === 'HEAD')) counts.reads++;
    else if (main) counts.writes++;
    else if (req.path.startsWith('/vending')) counts.vending++;
    res.on('finish', () => {
      if (res.statusCode === 429) counts.throttled++;
    });
    next();
  });
  app.use(sandbox.app);
  const { server, url } = await listen(app);
  const store = new MemoryStore();
  const policy = loadAccessPolicy();
  const client = new MomoClient({
    baseUrl: url,
    apiKey: 'sandbox-key',
    vendingUrl: `${url}/vending`,
    vendingApiKey: 'sandbox-vending-key',
    version: 'v5',
  });
  const engine = createEngine({
    store,
    channels: channelCapabilities,
    services: createFlowCalls({ client, policy, store, logger }),
    policy,
    defaultCountry: 'UG',
    currencies: ['UGX'],
    sessionTtlSeconds: 600,
    deadlineMs: { ussd: 3000, telegram: 10_000, slack: 10_000 },
    logger,
  });
  let users = 0;
  const nextUser = (channel: 'telegram' | 'ussd') =>
    channel === 'ussd' ? `+25677${String(2_000_000 + ++users).padStart(7, '0')}` : String(700_000 + ++users);
  try {
    const perFlow: UpstreamResult['perFlow'] = {};
    const each = quick ? 2 : 5;
    for (const flow of FLOWS) {
      counts = zero();
      let completed = 0;
      let lastScreen = '';
      for (let i = 0; i < each; i++) {
        // Spread over both kinds of channel: chat (no PIN) and USSD (PIN).
        const t = await converse(engine, flow, nextUser(i % 2 ? 'ussd' : 'telegram'), i % 2 ? 'ussd' : 'telegram');
        if (t.completed) completed++;
        lastScreen = t.screens.at(-1) ?? '';
        if (i === 0) log(`upstream ${flow}: ${t.screens.map((s) => s.split('\n')[0]).join(' | ')}`);
      }
      perFlow[flow] = {
        conversations: each,
        completed,
        reads: counts.reads / Math.max(1, completed),
        writes: counts.writes / Math.max(1, completed),
        vending: counts.vending / Math.max(1, completed),
        throttled: counts.throttled,
        lastScreen,
      };
      log(
        `upstream ${flow}: ${completed}/${each} completed, ${perFlow[flow].reads} reads, ${perFlow[flow].writes} writes, ${perFlow[flow].vending} vending calls each`,
      );
    }
    // 200 users at once, each one whole conversation of the flows that move money on their own word.
    const concurrentFlows: FlowId[] = ['pay', 'request'];
    counts = zero();
    const t0 = performance.now();
    const transcripts = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        converse(
          engine,
          concurrentFlows[i % concurrentFlows.length]!,
          nextUser(i % 2 ? 'ussd' : 'telegram'),
          i % 2 ? 'ussd' : 'telegram',
        ),
      ),
    );
    const concurrent = {
      users: 200,
      flows: concurrentFlows,
      completed: transcripts.filter((t) => t.completed).length,
      throttled: counts.throttled,
      reads: counts.reads,
      writes: counts.writes,
      seconds: Math.round((performance.now() - t0) / 10) / 100,
    };
    log(
      `upstream 200 users at once: ${concurrent.completed} completed, ${concurrent.throttled} throttled (429), ${concurrent.reads} reads`,
    );
    return { perFlow, concurrent };
  } finally {
    await engine.drain();
    server.close();
    await sandbox.close();
    await store.close();
  }
}
