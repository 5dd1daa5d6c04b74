/**
 * The peer: the same 4-step menu (welcome, phone, amount, PIN, end) with ussd-menu-builder, its session on
 * the same Redis. One new UssdMenu per request: its shared instance keeps per-request state (args, val,
 * result) on itself and loses answers under concurrency.
 */
import express from 'express';
import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import type { ServerResponse } from 'node:http';
import { readBody } from '../../src/http/body.js';
import { DirectRoutes, type DirectRequest } from '../../src/http/direct-routes.js';

const require = createRequire(import.meta.url);
// ussd-menu-builder ships no types.
const UssdMenu = require('ussd-menu-builder') as new () => {
  val: string;
  session: { get(key: string): Promise<string | null>; set(key: string, v: string): Promise<void> };
  sessionConfig(c: object): void;
  startState(o: object): void;
  state(name: string, o: object): void;
  con(text: string): void;
  end(text: string): void;
  run(args: object): Promise<string>;
};

const TTL = 180;

export function peerApp(redis: Redis, prefix = 'bench:ussd:peer:'): express.Express {
  const app = express();
  app.post('/ussd', express.urlencoded({ extended: false }), async (req, res) => {
    const menu = new UssdMenu();
    menu.sessionConfig({
      start: async () => undefined,
      get: async (sessionId: string, key: string) => redis.hget(`${prefix}${sessionId}`, key),
      set: async (sessionId: string, key: string, value: string) => {
        await redis.multi().hset(`${prefix}${sessionId}`, key, value).expire(`${prefix}${sessionId}`, TTL).exec();
      },
      end: async () => undefined,
    });
    menu.startState({ run: () => menu.con('Welcome\n1. Send money'), next: { '1': 'phone' } });
    menu.state('phone', { run: () => menu.con('Enter phone number'), next: { '*^\\+?\\d{9,15}$': 'amount' } });
    menu.state('amount', {
      run: async () => {
        await menu.session.set('phone', menu.val);
        menu.con('Enter amount');
      },
      next: { '*^\\d+$': 'pin' },
    });
    menu.state('pin', {
      run: async () => {
        await menu.session.set('amount', menu.val);
        menu.con('Enter PIN');
      },
      next: { '*^\\d{4}$': 'done' },
    });
    menu.state('done', {
      run: async () => {
        const [phone, amount] = await Promise.all([menu.session.get('phone'), menu.session.get('amount')]);
        menu.end(`Sent ${amount} to ${phone}`);
      },
    });
    const body = req.body as Record<string, string>;
    res.type('text/plain').send(
      await menu.run({
        sessionId: body.sessionId,
        phoneNumber: body.phoneNumber,
        serviceCode: body.serviceCode,
        text: body.text ?? '',
      }),
    );
  });
  return app;
}

/** The floor: express doing one Redis GET and one SET per hop, nothing else. */
export function floorApp(redis: Redis, prefix = 'bench:ussd:floor:'): express.Express {
  const app = express();
  app.post('/ussd', express.urlencoded({ extended: false }), async (req, res) => {
    const body = req.body as Record<string, string>;
    const key = `${prefix}${body.sessionId}`;
    const seen = await redis.get(key);
    const text = body.text ?? '';
    await redis.set(key, text, 'EX', TTL);
    const hop = text === '' ? 0 : text.split('*').length;
    void seen;
    const screens = ['CON Welcome\n1. Send money', 'CON Enter phone number', 'CON Enter amount', 'CON Enter PIN'];
    const parts = text.split('*');
    res.type('text/plain').send(screens[hop] ?? `END Sent ${parts[2]} to ${parts[1]}`);
  });
  return app;
}

/**
 * The layers under ours (bench/profile/layers.ts): express with our own body reader (src/http/body.ts) on
 * the same route, answering from the text alone (`http`) or after one Redis GET and one SET as the floor
 * does (`http-redis`); `node` is `http` served as our gateway routes are, on Node's own objects in front of
 * express (nodeLayer).
 */
export function layerApp(redis: Redis | undefined, prefix = 'bench:ussd:layer:'): express.Express {
  const app = express();
  app.post('/ussd', readBody('form', { limit: '16kb' }), layerAnswer(redis, prefix));
  return app;
}

/** The `http` layer served as ours is (src/http/direct-routes.ts): the same route on Node's own objects. */
export function nodeLayer(): DirectRoutes {
  const direct = new DirectRoutes();
  direct.post('/ussd', {}, readBody('form', { limit: '16kb' }), layerAnswer(undefined, ''));
  return direct;
}

function layerAnswer(redis: Redis | undefined, prefix: string) {
  return async (req: DirectRequest, res: ServerResponse) => {
    const body = req.body as Record<string, string>;
    const text = body.text ?? '';
    if (redis) {
      const key = `${prefix}${body.sessionId}`;
      await redis.get(key);
      await redis.set(key, text, 'EX', TTL);
    }
    const parts = text.split('*');
    const hop = text === '' ? 0 : parts.length;
    const screens = ['CON Welcome\n1. Send money', 'CON Enter phone number', 'CON Enter amount', 'CON Enter PIN'];
    const answer = screens[hop] ?? `END Sent ${parts[2]} to ${parts[1]}`;
    res
      .writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(answer) })
      .end(answer);
  };
}
