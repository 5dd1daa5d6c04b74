/**
 * `/momo <text>` -> what the user asked for: the menu, a flow, a navigation, or a free-text answer.
 */
import type { Inbound } from '../../src/conversation/types.js';
import type { FlowId } from '../../flows/types.js';

export type CommandIntent = Pick<Inbound, 'start' | 'nav' | 'text'>;

const FLOWS: readonly FlowId[] = ['pay', 'request', 'check', 'data', 'pin'];
const NAVS: readonly NonNullable<Inbound['nav']>[] = ['back', 'home', 'cancel'];

/**
 * `` -> the menu; `pay|request|check|data|pin` -> start that flow; `back|home|cancel` -> navigation (words
 * matched whole, any case); anything else -> the answer to the current question, trimmed, as typed.
 */
export function parseCommandText(raw: string | undefined): CommandIntent {
  const text = (raw ?? '').trim();
  if (text === '') return { start: 'menu' };
  const word = text.toLowerCase();
  const flow = FLOWS.find((f) => f === word);
  if (flow) return { start: flow };
  const nav = NAVS.find((n) => n === word);
  if (nav) return { nav };
  return { text };
}
