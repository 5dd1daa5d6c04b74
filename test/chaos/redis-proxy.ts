/**
 * A TCP proxy in front of Redis that reads the protocol (RESP) both ways, so it can fail Redis the ways a
 * real one fails, between the product and a healthy server:
 * - cut(): every connection dropped and new ones refused until restore() (a restart, a network partition);
 * - refuseWrites(ms): for a while, commands that add data are answered `-OOM command not allowed ...` without
 *   reaching Redis, as a Redis past its maxmemory answers them; reads and deletes still pass;
 * - swallowNextReply: the next reply is not relayed and its connection drops (the command did run; ioredis
 *   resends it on a new connection).
 *
 * Replies keep their order on each connection: a refused command's error waits behind the replies of the
 * commands sent before it. A connection that subscribes (pub/sub replies are not one per command) or opens a
 * MULTI is relayed as it is from then on or until EXEC/DISCARD.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * Commands a Redis out of memory refuses (flagged `denyoom`: those that can add data) among those ioredis,
 * BullMQ and rate-limiter-flexible send, plus scripts (a script that may write is refused at its start).
 */
const REFUSED_WHEN_FULL = new Set([
  'set',
  'setex',
  'psetex',
  'setnx',
  'getset',
  'append',
  'incr',
  'incrby',
  'incrbyfloat',
  'decr',
  'decrby',
  'hset',
  'hsetnx',
  'hmset',
  'hincrby',
  'lpush',
  'rpush',
  'lpushx',
  'rpushx',
  'linsert',
  'lset',
  'rpoplpush',
  'lmove',
  'brpoplpush',
  'blmove',
  'sadd',
  'smove',
  'zadd',
  'zincrby',
  'xadd',
  'restore',
  'eval',
  'evalsha',
  'fcall',
]);

const OOM = Buffer.from("-OOM command not allowed when used memory > 'maxmemory'.\r\n");
const CRLF = 0x0d;

/** Length in bytes of the complete RESP2/RESP3 value at `at`, or -1 when `buf` holds only part of it. */
export function respLength(buf: Buffer, at = 0): number {
  if (at >= buf.length) return -1;
  const lineEnd = buf.indexOf(CRLF, at);
  if (lineEnd < 0 || lineEnd + 1 >= buf.length) return -1;
  const afterLine = lineEnd + 2;
  const type = String.fromCharCode(buf[at]!);
  const count = () => Number(buf.toString('latin1', at + 1, lineEnd));
  switch (type) {
    case '$': // bulk string
    case '=': // verbatim string
    case '!': {
      // blob error
      const n = count();
      if (n < 0) return afterLine - at;
      return afterLine + n + 2 <= buf.length ? afterLine + n + 2 - at : -1;
    }
    case '*': // array
    case '~': // set
    case '>': // push
    case '%': // map
    case '|': {
      // attribute
      const n = count();
      const items = type === '%' || type === '|' ? 2 * n : n;
      let end = afterLine;
      for (let i = 0; i < items; i++) {
        const length = respLength(buf, end);
        if (length < 0) return -1;
        end += length;
      }
      return end - at;
    }
    default:
      // +simple, -error, :integer, _null, ,double, #boolean, (big number; an inline command is one line too.
      return afterLine - at;
  }
}

/** The command name and first argument (usually the key) of a command sent as an array of bulk strings. */
export function commandOf(frame: Buffer): { name: string; args: string[] } {
  if (frame[0] !== 0x2a /* '*' */)
    return { name: frame.toString('latin1').trim().split(/\s+/)[0]!.toLowerCase(), args: [] };
  const args: string[] = [];
  let at = frame.indexOf(CRLF) + 2;
  while (at < frame.length && args.length < 4) {
    const lineEnd = frame.indexOf(CRLF, at);
    const n = Number(frame.toString('latin1', at + 1, lineEnd));
    args.push(frame.toString('utf8', lineEnd + 2, lineEnd + 2 + n));
    at = lineEnd + 2 + n + 2;
  }
  return { name: (args.shift() ?? '').toLowerCase(), args };
}

/** What happens to one command; `true` from a rule refuses it. */
export type WriteRule = (command: { name: string; args: string[] }) => boolean;

type Pending = { kind: 'upstream' } | { kind: 'local'; reply: Buffer };

/** One client connection and its upstream, with the replies it still expects in order. */
class Link {
  private fromClient: Buffer = Buffer.alloc(0);
  private fromRedis: Buffer = Buffer.alloc(0);
  private readonly pending: Pending[] = [];
  /** Relayed as it is: the connection subscribed (or ended up out of step). */
  private raw = false;
  private inMulti = false;

  constructor(
    readonly client: net.Socket,
    readonly upstream: net.Socket,
    private readonly proxy: RedisProxy,
  ) {
    client.on('data', (chunk: Buffer) => this.onClient(chunk));
    upstream.on('data', (chunk: Buffer) => this.onRedis(chunk));
  }

  private onClient(chunk: Buffer): void {
    if (this.raw) {
      this.upstream.write(chunk);
      return;
    }
    this.fromClient = this.fromClient.length === 0 ? chunk : Buffer.concat([this.fromClient, chunk]);
    let length: number;
    while ((length = respLength(this.fromClient)) > 0) {
      const frame = this.fromClient.subarray(0, length);
      this.fromClient = this.fromClient.subarray(length);
      const command = commandOf(frame);
      if (/^s?p?subscribe$|^monitor$/.test(command.name)) {
        // Replies are no longer one per command: relay everything from here on.
        this.raw = true;
        this.upstream.write(frame);
        this.upstream.write(this.fromClient);
        this.fromClient = Buffer.alloc(0);
        return;
      }
      if (command.name === 'multi') this.inMulti = true;
      if (command.name === 'exec' || command.name === 'discard') this.inMulti = false;
      if (!this.inMulti && this.proxy.refuses(command)) {
        this.pending.push({ kind: 'local', reply: OOM });
        this.flushLocal();
      } else {
        this.pending.push({ kind: 'upstream' });
        this.upstream.write(frame);
      }
    }
  }

  private onRedis(chunk: Buffer): void {
    if (this.raw && this.pending.length === 0) {
      this.relay(chunk);
      return;
    }
    this.fromRedis = this.fromRedis.length === 0 ? chunk : Buffer.concat([this.fromRedis, chunk]);
    let length: number;
    while ((length = respLength(this.fromRedis)) > 0) {
      const reply = this.fromRedis.subarray(0, length);
      this.fromRedis = this.fromRedis.subarray(length);
      this.flushLocal();
      this.pending.shift();
      if (this.proxy.takeSwallow()) {
        // The command ran; its reply is lost with the connection.
        this.drop();
        return;
      }
      this.relay(reply);
      this.flushLocal();
      if (this.raw && this.pending.length === 0) {
        this.relay(this.fromRedis);
        this.fromRedis = Buffer.alloc(0);
        return;
      }
    }
  }

  /** Sends the refusals that are next in line. */
  private flushLocal(): void {
    while (this.pending[0]?.kind === 'local') this.relay((this.pending.shift() as { reply: Buffer }).reply);
  }

  private relay(bytes: Buffer): void {
    if (bytes.length > 0 && !this.client.destroyed) this.client.write(bytes);
  }

  drop(): void {
    this.client.destroy();
    this.upstream.destroy();
  }
}

export class RedisProxy {
  private readonly server: net.Server;
  private readonly links = new Set<Link>();
  private down = false;
  private refusingUntil = 0;
  private rule: WriteRule | undefined;
  port = 0;
  /** How many times Redis was cut, how many commands were refused, and how many connections were tried. */
  cuts = 0;
  refused = 0;
  connections = 0;

  constructor(private readonly target: { host: string; port: number }) {
    this.server = net.createServer((client) => {
      this.connections++;
      if (this.down) {
        client.destroy();
        return;
      }
      const upstream = net.connect(this.target.port, this.target.host);
      const link = new Link(client, upstream, this);
      this.links.add(link);
      const drop = () => {
        link.drop();
        this.links.delete(link);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', () => resolve());
    });
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  /** Drops every connection and refuses new ones until restore(). */
  cut(): void {
    this.cuts++;
    this.down = true;
    for (const link of this.links) link.drop();
    this.links.clear();
  }

  restore(): void {
    this.down = false;
  }

  /** For `ms`, answers commands that add data with Redis's out-of-memory error instead of passing them on. */
  refuseWrites(ms: number): void {
    this.refusingUntil = Math.max(this.refusingUntil, Date.now() + ms);
  }

  /** Refuses, besides refuseWrites(), every command `rule` picks (a test's precise fault); undefined to stop. */
  refuseWhen(rule: WriteRule | undefined): void {
    this.rule = rule;
  }

  /** The next reply from Redis is not relayed: its connection drops instead (the command did run). */
  swallowNextReply = false;

  /** @internal Whether this command is refused now. */
  refuses(command: { name: string; args: string[] }): boolean {
    const refused =
      (Date.now() < this.refusingUntil && REFUSED_WHEN_FULL.has(command.name)) || this.rule?.(command) === true;
    if (refused) this.refused++;
    return refused;
  }

  /** @internal Takes the swallow flag. */
  takeSwallow(): boolean {
    const swallow = this.swallowNextReply;
    this.swallowNextReply = false;
    return swallow;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
