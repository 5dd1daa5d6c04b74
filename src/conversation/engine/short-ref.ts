/**
 * The short ref of a waiting run: the ref a person can read out (`MC-7K2QX`, drawn by the intent's insert,
 * src/journal/short-ref.ts) of the money-moving call a conversation's run is making, for the "being confirmed"
 * screen its waiters get at their deadline. One read, waited for briefly; none when no intent is written yet.
 * Not here: drawing a short ref (the journal), nor the screen that shows it (answers.ts).
 */
import { errorMessage } from '../../log.js';
import { within } from '../../within.js';
import type { StoredFlow } from '../flow/flow-runtime.js';
import { refOf, type RunnerOptions } from './run.js';

/** How long the "being confirmed" screen waits for the short ref it names (one read). */
const SHORT_REF_WAIT_MS = 300;

/**
 * The short ref of the money-moving call `storedFlow` waits in (its Duplicate-Check-Key's, drawn by the intent
 * before the call), for the "being confirmed" screen; undefined when none is written yet, or not within
 * {@link SHORT_REF_WAIT_MS} (the screen then names none). Never throws.
 */
export async function shortRefOfRun(o: RunnerOptions, storedFlow: StoredFlow | undefined): Promise<string | undefined> {
  if (!storedFlow || !o.shortRefOf) return undefined;
  try {
    // A stored flow of another build's shape is read from its stored call: this release may not have its state.
    const { runtime } = o;
    const invocation = runtime.readsAsIs(storedFlow)
      ? runtime.invocation(storedFlow.flow, runtime.restore(storedFlow))
      : runtime.storedInvocation(storedFlow);
    const ref = invocation ? refOf(invocation) : undefined;
    return ref ? await within(o.shortRefOf(ref), SHORT_REF_WAIT_MS) : undefined;
  } catch (error) {
    o.logger.warn({ err: errorMessage(error) }, 'engine: the short ref of a payment being confirmed was not read');
    return undefined;
  }
}
