/**
 * Reading the events a flow receives: the engine's FlowEvents (a choice picked, an answer typed) and the
 * done and error events of an ended invoke. Named guards and actions see their events typed as FlowEvent,
 * so the invoke readers take any event object.
 */
import type { FlowEvent } from './types.js';

/** What an ended invoke resolved with. */
export const outputOf = <T>(event: object): T => (event as { output: T }).output;
/** What an ended invoke rejected with. */
export const errorOf = (event: object): unknown => (event as { error?: unknown }).error;
/** The id of the choice picked; undefined for any other event. */
export const chosenId = (event: FlowEvent): string | undefined => (event.type === 'CHOSEN' ? event.id : undefined);
/** The text typed; empty for any other event. */
export const answer = (event: FlowEvent): string => (event.type === 'ANSWERED' ? event.value : '');
