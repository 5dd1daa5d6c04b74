/**
 * What a failed conversation of a chaos run says about itself, so its cause can be found from the report:
 * its kinds of failure, the user's trail (every request with the instance that answered and the screen or
 * message it got), the payment calls the service saw for its chat (instance, Duplicate-Check-Key, the fault
 * injected, the status), the sandbox's payments for it, the instances killed while it ran, and for a user
 * never told: the webhook deliveries of its payments and the Redis keys that name its chat or payments.
 */
import type { Redis } from 'ioredis';
import type { FailureKind, SandboxPayment } from './count.js';
import type { Instance } from './instances.js';
import type { ServiceCall } from './proxies.js';
import type { Conversation } from './users.js';

export interface DiagnosisSources {
  /** When the run started (times are shown relative to it). */
  startedAt: number;
  payments: SandboxPayment[];
  calls: ServiceCall[];
  instances: Instance[];
  /** Webhook deliveries of one payment, as lines. */
  deliveries(paymentId: number): string[];
  redis: Redis;
}

const seconds = (at: number, startedAt: number) => `${((at - startedAt) / 1000).toFixed(2)} s`;

const glob = (text: string) => text.replace(/([*?[\]\\])/g, '\\$1');

/** Keys (of the run's database) matching `pattern`, with their type, TTL and a glimpse of a string's value. */
async function keysMatching(redis: Redis, pattern: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    found.push(...keys);
    cursor = next;
  } while (cursor !== '0' && found.length < 20);
  return Promise.all(
    found.slice(0, 20).map(async (key) => {
      const [type, pttl] = await Promise.all([redis.type(key), redis.pttl(key)]);
      const value = type === 'string' ? ` = ${(await redis.get(key))?.slice(0, 120)}` : '';
      return `${key} (${type}, ttl ${pttl < 0 ? pttl : `${Math.round(pttl / 1000)} s`})${value}`;
    }),
  );
}

export async function diagnose(c: Conversation, kinds: FailureKind[], sources: DiagnosisSources): Promise<string> {
  const at = (t: number) => seconds(t, sources.startedAt);
  const payments = sources.payments.filter((p) => p.chat === c.chat);
  const calls = sources.calls.filter((call) => call.chat === c.chat);
  const from = (c.startedAt ?? 0) - 2000;
  const to = c.endedAt ?? Date.now();
  const kills = sources.instances.filter((i) => i.killedAt !== undefined && i.killedAt >= from && i.killedAt <= to);
  const lines = [
    `${c.chat} [${kinds.join(', ')}]: ${c.confirmed ? `confirmed by the ${c.ackBy} at ${at(c.confirmedAt!)}` : 'never acknowledged'}, ${c.told ? 'told' : 'not told'}` +
      `, ${c.restarts} restarts; final confirmations not acknowledged: ${JSON.stringify(c.unacknowledged)}`,
    `  trail:`,
    ...c.trail.map(
      (s) =>
        `    ${(s.t / 1000).toFixed(2)} s${s.took === undefined ? '' : ` (+${(s.took / 1000).toFixed(2)})`} ${s.via ?? '--'}  ${s.what}`,
    ),
    `  payment calls: ${calls.map((call) => `${at(call.at)} ${call.instance} key=${call.key} fault=${call.fault} status=${call.status ?? '-'}`).join('; ') || 'none'}`,
    `  sandbox payments: ${payments.map((p) => `#${p.id} ${p.state} ref=${p.ref} created ${p.created}`).join('; ') || 'none'}`,
    `  kills while it ran: ${
      kills
        .map(
          (i) =>
            `${i.name} at ${at(i.killedAt!)}${calls.some((call) => call.instance === i.name && call.fault.startsWith('kill')) ? ' (it sent a payment call of this chat)' : ''}`,
        )
        .join('; ') || 'none'
    }`,
  ];
  if (kinds.includes('never-told')) {
    const deliveries = payments.flatMap((p) => sources.deliveries(p.id));
    lines.push(`  webhook deliveries: ${deliveries.join('; ') || 'none'}`);
    const patterns = [
      `*${glob(c.chat.slice(c.chat.indexOf(':') + 1))}*`,
      ...payments.flatMap((p) => [`*:${p.id}`, `*:${p.id}:*`]),
    ];
    const keys = (await Promise.all(patterns.map((pattern) => keysMatching(sources.redis, pattern)))).flat();
    lines.push(`  redis keys: ${keys.join('; ') || 'none'}`);
  }
  return lines.join('\n');
}
