/**
 * The pieces of a step that asks for a free-text answer, shared by the flows that have them (check, pay,
 * request, change PIN): its screen, and the transitions of an answer and of going back. The transitions name
 * guards and actions each machine implements for its own context: `isValidAnswer` and `storeAnswer` (by the
 * field answered), `isChosen` (by a choice's id) and `forget` (the fields a step filled).
 */
import type { Text, View } from './types.js';

/** A screen asking for one free-text answer, with the reason the last one was refused. */
export const ask =
  (key: string, input: View['input']) =>
  (context: { error?: Text }): View => ({ text: { key }, error: context.error, input });

export const isValid = <F extends string>(field: F) => ({ type: 'isValidAnswer', params: { field } }) as const;
export const store = <F extends string>(field: F) => ({ type: 'storeAnswer', params: { field } }) as const;
export const chosen = (id: string) => ({ type: 'isChosen', params: { id } }) as const;

/**
 * An answer for `field`: a valid one is stored and the flow goes on to `next`; a refused one stores only its
 * reason (storeAnswer), and the step is asked again.
 */
export const answered = <F extends string>(field: F, next: string) =>
  [{ guard: isValid(field), actions: store(field), target: next }, { actions: store(field) }] as const;

/**
 * Going back to a step: forget what that step (and any later one) filled, and the error, so the step is asked
 * afresh and the context is the one it had when first reached. `backIn<Context>()` is a machine's own, its
 * fields checked against its context.
 */
export const backIn =
  <C>() =>
  (target: string, ...fields: Array<keyof C>) =>
    ({ target, actions: { type: 'forget', params: { fields } } }) as const;
