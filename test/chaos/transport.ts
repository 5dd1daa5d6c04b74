/**
 * How requests reach the product instances in a chaos run, as a gateway or Telegram behind a load balancer
 * delivers them: a conversation's requests go to the instances in turn (so consecutive requests of one
 * conversation land on different processes); a connection refused (the instance is down) is tried on the
 * next one, as a balancer does; a request sent that gets no answer (the instance died holding it, or 15 s
 * passed) is NoAnswer, and the caller decides what the user or Telegram does next. A share of requests is
 * delivered twice, to the next instance too, at once or after the first answer.
 */
import http from 'node:http';
import type { Fleet } from './instances.js';
import { until } from '../until.js';

export interface Answer {
  status: number;
  text: string;
  /** The instance that answered. */
  instance: string;
  /** When the request went out and when its answer came (ms since the epoch). */
  sentAt: number;
  answeredAt: number;
}

/** The request was sent and no answer came. */
export class NoAnswer extends Error {
  constructor(
    readonly instance: string,
    cause: string,
  ) {
    super(`no answer from ${instance}: ${cause}`);
  }
}

export interface Request {
  path: string;
  headers: Record<string, string>;
  body: string;
}

const ANSWER_TIMEOUT_MS = 15_000;
/** How long a request waits for any instance to be up before giving up. */
const NO_INSTANCE_MS = 60_000;

export interface TransportOptions {
  fleet: Fleet;
  /** Share of requests delivered twice. */
  duplicateShare: number;
  random: () => number;
  /** A copy (the second delivery) was answered: the caller may compare it with the first. */
  onCopy?(request: Request, first: Answer | undefined, copy: Answer): void;
}

export class Transport {
  duplicates = 0;
  refused = 0;
  noAnswers = 0;

  constructor(private readonly options: TransportOptions) {}

  /** One delivery to the instance in turn `turn` (the next one when it refuses). */
  async send(turn: number, request: Request): Promise<Answer> {
    const deadline = Date.now() + NO_INSTANCE_MS;
    for (let i = 0; Date.now() < deadline; i++) {
      const next = () => this.options.fleet.up(turn + i);
      const left = Math.max(0, deadline - Date.now());
      const instance = await until('an instance up', next, { timeoutMs: left, everyMs: 100 }).catch(() => undefined);
      if (!instance) break;
      try {
        return await post(instance.port!, instance.name, request);
      } catch (error) {
        if (!(error instanceof Refused)) {
          this.noAnswers++;
          throw error;
        }
        this.refused++;
        // Refused: the instance died and its exit is on its way. The next try waits until the fleet sees it down
        // (its slot empty or another instance's), as a balancer's health check takes it out, so the tries never
        // spin on a dead one.
        const gone = () => this.options.fleet.up(turn + i) !== instance;
        await until('the refusing instance seen down', gone, {
          timeoutMs: Math.max(0, deadline - Date.now()),
          everyMs: 10,
        }).catch(() => undefined);
      }
    }
    throw new Error(`no instance up for ${NO_INSTANCE_MS / 1000} s to take ${request.path}`);
  }

  /** A request, sometimes delivered twice (to the next instance too, at the same time or after the answer). */
  async deliver(turn: number, request: Request): Promise<Answer> {
    const r = this.options.random();
    if (r < this.options.duplicateShare / 2) {
      this.duplicates++;
      const copy = this.send(turn + 1, request).catch(() => undefined);
      const first = await this.send(turn, request);
      const second = await copy;
      if (second) this.options.onCopy?.(request, undefined, second);
      return first;
    }
    const first = await this.send(turn, request);
    if (r < this.options.duplicateShare) {
      this.duplicates++;
      const second = await this.send(turn + 1, request).catch(() => undefined);
      if (second) this.options.onCopy?.(request, first, second);
    }
    return first;
  }
}

class Refused extends Error {}

function post(port: number, instance: string, request: Request): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const sentAt = Date.now();
    let sent = false;
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: request.path,
        headers: { ...request.headers, 'content-length': Buffer.byteLength(request.body) },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            text: Buffer.concat(chunks).toString(),
            instance,
            sentAt,
            answeredAt: Date.now(),
          }),
        );
        res.on('error', (error) => reject(new NoAnswer(instance, error.message)));
      },
    );
    req.on('socket', (socket) => socket.on('connect', () => (sent = true)));
    req.setTimeout(ANSWER_TIMEOUT_MS, () => req.destroy(new Error('timed out')));
    req.on('error', (error: NodeJS.ErrnoException) => {
      reject(
        !sent && error.code === 'ECONNREFUSED' ? new Refused(error.message) : new NoAnswer(instance, error.message),
      );
    });
    req.end(request.body);
  });
}
