/**
 * A tiny Socket Mode server (RFC 6455 over node:http, no dependency): says `hello` on connect, sends
 * envelopes, and hands back what the app sends (acks). Enough of WebSocket for JSON text frames, ping and
 * close.
 */
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

function frame(opcode: number, payload: Buffer): Buffer {
  const length = payload.length;
  const header =
    length < 126
      ? Buffer.from([0x80 | opcode, length])
      : length < 65536
        ? Buffer.from([0x80 | opcode, 126, length >> 8, length & 0xff])
        : Buffer.concat([
            Buffer.from([0x80 | opcode, 127]),
            (() => {
              const b = Buffer.alloc(8);
              b.writeBigUInt64BE(BigInt(length));
              return b;
            })(),
          ]);
  return Buffer.concat([header, payload]);
}

/** Frames complete in `buffer` (client frames are masked), and what is left over. */
function parseFrames(buffer: Buffer): { frames: Array<{ opcode: number; payload: Buffer }>; rest: Buffer } {
  const frames: Array<{ opcode: number; payload: Buffer }> = [];
  let offset = 0;
  for (;;) {
    if (buffer.length - offset < 2) break;
    const opcode = buffer[offset]! & 0x0f;
    let length = buffer[offset + 1]! & 0x7f;
    let cursor = offset + 2;
    if (length === 126) {
      if (buffer.length < cursor + 2) break;
      length = buffer.readUInt16BE(cursor);
      cursor += 2;
    } else if (length === 127) {
      if (buffer.length < cursor + 8) break;
      length = Number(buffer.readBigUInt64BE(cursor));
      cursor += 8;
    }
    if (buffer.length < cursor + 4 + length) break;
    const mask = buffer.subarray(cursor, cursor + 4);
    const payload = Buffer.from(buffer.subarray(cursor + 4, cursor + 4 + length));
    for (let i = 0; i < payload.length; i += 1) payload[i]! ^= mask[i % 4]!;
    frames.push({ opcode, payload });
    offset = cursor + 4 + length;
  }
  return { frames, rest: buffer.subarray(offset) };
}

export class SocketModeServer {
  /** JSON messages the app sent. */
  readonly received: Array<Record<string, any>> = [];
  private socket?: Duplex;
  private server?: Server;
  private waiters: Array<() => void> = [];
  private seen = 0;

  get url(): string {
    const { port } = this.server!.address() as AddressInfo;
    return `ws://127.0.0.1:${port}/link`;
  }

  async start(): Promise<void> {
    this.server = createServer((_req, res) => res.writeHead(426).end());
    this.server.on('upgrade', (req, socket) => {
      const accept = createHash('sha1').update(`${req.headers['sec-websocket-key']}${GUID}`).digest('base64');
      socket.write(
        `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
      );
      this.socket = socket;
      let pending: Buffer = Buffer.alloc(0);
      socket.on('data', (chunk: Buffer) => {
        const { frames, rest } = parseFrames(Buffer.concat([pending, chunk]));
        pending = rest;
        for (const { opcode, payload } of frames) {
          if (opcode === 0x1) {
            this.received.push(JSON.parse(payload.toString('utf8')));
            for (const wake of this.waiters.splice(0)) wake();
          } else if (opcode === 0x9) socket.write(frame(0xa, payload));
          else if (opcode === 0x8) socket.end(frame(0x8, payload));
        }
      });
      socket.on('error', () => socket.destroy());
      this.send({ type: 'hello', num_connections: 1, connection_info: { app_id: 'A0001' } });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
  }

  send(message: object): void {
    this.socket?.write(frame(0x1, Buffer.from(JSON.stringify(message))));
  }

  /** The next message from the app not yet returned. */
  async next(): Promise<Record<string, any>> {
    for (;;) {
      const message = this.received[this.seen];
      if (message) {
        this.seen += 1;
        return message;
      }
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  async close(): Promise<void> {
    this.socket?.destroy();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}
