/**
 * One USSD hop, whatever the gateway: decode -> find the new answer -> engine (or paging) -> render ->
 * compare-and-set the session record -> encode. Logs carry the gateway, the session id, the masked phone
 * and the hop: never a body, an answer or a screen (answers carry PINs).
 */
import type { Request, Response } from 'express';
import type { Engine, Inbound, Prompt, SessionStore } from '../../src/conversation/types.js';
import { maskPhone, type Logger } from '../../src/log.js';
import { parsePhone } from '../../flows/input.js';
import type { Codec } from './codecs/index.js';
import { NAV, renderPrompt } from './renderer.js';
import { digest, nextStep, readRecord, type Step, type UssdSessionRecord } from './session.js';

export interface HopOptions {
  engine: Engine;
  store: SessionStore;
  /** The engine's USSD deadline; a second past it the router stops waiting and apologises. */
  deadlineMs: number;
  logger: Logger;
  sessionTtlSeconds: number;
  defaultCountry: string;
}

/**
 * How long past the deadline the router still waits for the engine (which answers "processing" at the
 * deadline itself) before answering END on its own. 1 s: well inside a gateway's timeout (15 s at
 * Africa's Talking), and far more than the engine needs to persist and answer after its deadline.
 */
const GUARD_GRACE_MS = 1000;

const APOLOGY_LATE: Prompt = {
  text: 'Sorry, this is taking longer than expected. Dial again shortly to see the result.',
  final: true,
};
const APOLOGY_FAILED: Prompt = { text: 'Sorry, something went wrong. Please dial again.', final: true };

interface LogContext {
  gateway: string;
  sessionId: string;
  /** Masked. */
  phone: string;
}
type HopContext = LogContext & { hop: number };

/** Gateways send international numbers without the `+` (256772123456): put it back before parsing. */
function withPlus(msisdn: string): string {
  return /^[1-9]\d{7,14}$/.test(msisdn) ? `+${msisdn}` : msisdn;
}

export function createHopHandler(options: HopOptions) {
  const { engine, store, deadlineMs, logger, sessionTtlSeconds, defaultCountry } = options;

  return (codec: Codec) => async (req: Request, res: Response) => {
    const decoded = codec.decode(req.body);
    if (!decoded.ok) {
      logger.warn({ gateway: codec.name, reason: decoded.reason }, 'ussd request refused');
      res.status(400).json({ error: decoded.reason });
      return;
    }
    const request = decoded.request;
    const parsed = parsePhone(withPlus(request.phoneNumber), defaultCountry);
    if (!parsed.ok) {
      logger.warn({ gateway: codec.name, sessionId: request.sessionId }, 'ussd request refused: phone number');
      res.status(400).json({ error: 'phone number is not a valid mobile number' });
      return;
    }
    const phone = parsed.e164;
    const ctx: LogContext = { gateway: codec.name, sessionId: request.sessionId, phone: maskPhone(phone) };
    const key = `ussd:${codec.name}:${request.sessionId}`;
    const send = (screen: { text: string; final: boolean }, hop: number) => {
      const reply = codec.encode({ ...screen, hop }, request);
      if (reply.type === 'text') res.type('text/plain').send(reply.body);
      else res.json(reply.body);
    };

    try {
      if (request.hop.kind === 'end') {
        await store.delete(key);
        logger.info(ctx, 'ussd session released by the gateway');
        send({ text: '', final: true }, 0);
        return;
      }
      const stored = await store.get(key);
      const record = stored ? readRecord(stored.snapshot) : null;
      if (record?.owner !== undefined && record.owner !== digest(phone)) {
        // A gateway never moves a session to another number: this would read or continue someone else's.
        logger.warn(ctx, 'ussd session id reused with another phone number: refused');
        send(renderPrompt(APOLOGY_FAILED), 0);
        return;
      }
      const step = nextStep(record, request.hop);
      if (step.kind === 'repeat') {
        logger.info({ ...ctx, hop: step.record.hop }, 'ussd repeat: same screen');
        send(step.record.screen, step.record.hop);
        return;
      }
      const hop = step.kind === 'answer' ? step.hop : 0;
      const next = await advance(step, record, phone, { ...ctx, hop });
      const version = await store.set(key, next, stored?.version ?? null, sessionTtlSeconds);
      if (version === null) {
        // Another delivery of this hop got there first: answer what it answered.
        const winner = await store.get(key);
        const won = winner ? readRecord(winner.snapshot) : null;
        if (won && won.hop >= hop) {
          logger.info({ ...ctx, hop }, 'ussd concurrent delivery: same screen');
          send(won.screen, won.hop);
          return;
        }
      }
      logger.info({ ...ctx, hop, final: next.screen.final }, 'ussd hop');
      send(next.screen, hop);
    } catch (err) {
      logger.error({ ...ctx, err: errorName(err) }, 'ussd hop failed');
      send(renderPrompt(APOLOGY_FAILED), 0);
    }
  };

  /** Works out the next record: paging within the last Prompt, or one engine call. */
  async function advance(
    step: Exclude<Step, { kind: 'repeat' }>,
    record: UssdSessionRecord | null,
    phone: string,
    ctx: HopContext,
  ): Promise<UssdSessionRecord> {
    const seen = step.seen;
    const base: Inbound = {
      channel: 'ussd',
      conversationId: phone,
      userId: phone,
      phoneNumber: phone,
      messageId: `${ctx.sessionId}:${ctx.hop}`,
    };
    const show = (prompt: Prompt, page: number): UssdSessionRecord => {
      const screen = renderPrompt(prompt, page);
      return {
        hop: ctx.hop,
        seenLength: seen.length,
        seenDigest: digest(seen),
        prompt,
        page: screen.page,
        screen: { text: screen.text, final: screen.final },
        owner: digest(phone),
      };
    };

    if (step.kind === 'dial' || record === null) return show(await ask({ ...base, newSession: true }, ctx), 0);

    const key = step.answer.trim();
    const shown = renderPrompt(record.prompt, record.page);
    if (key === NAV.more && shown.page < shown.pageCount - 1) return show(record.prompt, shown.page + 1);
    if (key === NAV.back && shown.page > 0) return show(record.prompt, shown.page - 1);
    return show(await ask({ ...base, ...toAction(step.answer, record.prompt) }, ctx), 0);
  }

  /** engine.handle, never waiting much past the deadline and never throwing. */
  async function ask(inbound: Inbound, ctx: HopContext): Promise<Prompt> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<{ kind: 'late' }>((resolve) => {
      timer = setTimeout(() => resolve({ kind: 'late' }), deadlineMs + GUARD_GRACE_MS);
    });
    const work = Promise.resolve()
      .then(() => engine.handle(inbound))
      .then(
        (prompt) => ({ kind: 'done' as const, prompt }),
        (err: unknown) => ({ kind: 'failed' as const, err }),
      );
    const outcome = await Promise.race([work, late]);
    clearTimeout(timer);
    if (outcome.kind === 'done') return outcome.prompt;
    if (outcome.kind === 'late') {
      logger.warn(ctx, 'ussd engine past the deadline: apologised');
      return APOLOGY_LATE;
    }
    logger.error({ ...ctx, err: errorName(outcome.err) }, 'ussd engine failed: apologised');
    return APOLOGY_FAILED;
  }
}

/** An answer -> what it means: `00` home, `0` back, a shown choice's number, or text. */
function toAction(answer: string, prompt: Prompt): Pick<Inbound, 'nav' | 'choice' | 'text'> {
  const key = answer.trim();
  if (key === NAV.home) return { nav: 'home' };
  if (key === NAV.back) return { nav: 'back' };
  if (/^\d{1,2}$/.test(key)) {
    const choice = prompt.choices?.[Number(key) - 1];
    if (choice) return { choice: choice.id };
  }
  return { text: answer };
}

/** The error's class name only: messages can quote the input. */
function errorName(err: unknown): string {
  return err instanceof Error ? err.name : typeof err;
}
