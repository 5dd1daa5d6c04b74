/**
 * One delivery, from the adapter to its answer, top to bottom:
 *
 * 1. The conversation record (ledger.ts), as this process last wrote it (record-cache.ts) or read, with what a
 *    conversation starting over needs in the same round trip (turn-read.ts).
 * 2. The channel decides from its own state kept there and what it may know of the conversation (view.ts,
 *    TurnEngine): a reply of its own (a resend, a page turn), or a message for the flow (one-delivery.ts).
 * 3. The ledger: a delivery it holds gets its answer again, or waits for the run it is waiting on (resend.ts).
 * 4. A new delivery (step.ts): one pure step of the flow by the continuation rule (continuation.ts; flow-runtime.ts:
 *    start a flow, or send it ONE event), written with its ledger entry and the channel's state in one
 *    compare-and-set (on conflict: read, redo the step). A step into a PIN check runs the check first
 *    (secret-check.ts), and the step after it is the one written. A step that waits for the person is rendered
 *    with the notes it shows (step-notes.ts) and written (show-screen.ts); what follows it is after-step.ts.
 * 5. A step into a busy state (a service call) is written with a run id, its lease taken in the same atomic
 *    write, and handed to the runner (start-run.ts, runner.ts); the delivery waits for its outcome up to the
 *    channel's deadline. A delivery arriving while a run is out is written as waiting and waits for it too.
 * 6. The answers a dial string typed ahead, each a delivery of its own (typed-ahead.ts).
 *
 * At most one read and one write a message (none read mid-flow when the record is kept here).
 */
import type { Decide, Participant } from '../types.js';
import type { Delivered, TurnOptions } from './delivery.js';
import { deliverOne } from './one-delivery.js';
import { deliverAhead } from './typed-ahead.js';

/** `deliver(participant, decide)`: one delivery, its answer and the channel state kept. */
export function createTurn(o: TurnOptions) {
  /** One delivery, then the answers its decision typed ahead, while the channel's deadline has not passed. */
  return async function deliver<S>(participant: Participant, decide: Decide<S>): Promise<Delivered<S>> {
    const answerBy = o.now() + o.deadlineOf(participant.channel);
    const first = await deliverOne(o, participant, decide, undefined, answerBy);
    return deliverAhead(o, participant, first, answerBy);
  };
}
