/**
 * A delivery the ledger already holds (a resend, or a copy of it in another process): the answer it got,
 * again, or, while it waits for the run that is out, a wait for that run like the first.
 */
import type { Prompt } from '../types.js';
import type { Inbound } from '../types.js';
import { who, type Delivered, type TurnOptions } from './delivery.js';
import { WAITING, type Answer, type Stored } from './ledger.js';

export async function answerAgain<S>(
  o: Pick<TurnOptions, 'runner' | 'logger'>,
  key: string,
  inbound: Inbound,
  id: string,
  entry: Answer,
  stored: Stored,
  after: (prompt: Prompt) => S,
): Promise<Delivered<S>> {
  o.logger.info(who(inbound), 'engine: duplicate delivery');
  if (entry !== WAITING) return { prompt: entry, state: after(entry) };
  const lang = stored.record.profile?.lang ?? 'en';
  return o.runner.wait({ key, participant: inbound, id, lang, notes: [], after }, stored) as Promise<Delivered<S>>;
}
