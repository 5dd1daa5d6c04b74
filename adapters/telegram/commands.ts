/**
 * The bot's commands: what setMyCommands registers, what /help lists, and what each one asks of the engine.
 * One table, so the three never drift apart.
 */
import type { Inbound } from '../../src/conversation/types.js';

/** What a command asks for: part of an Inbound for the engine, or the help text (no engine call). */
export type CommandAction = Pick<Inbound, 'start' | 'nav'> | 'help';

export interface Command {
  command: string;
  description: string;
  action: CommandAction;
}

export const COMMANDS: readonly Command[] = [
  { command: 'start', description: 'Main menu', action: { nav: 'home' } },
  { command: 'pay', description: 'Pay someone', action: { start: 'pay' } },
  { command: 'request', description: 'Request money', action: { start: 'request' } },
  { command: 'check', description: 'Check a collection', action: { start: 'check' } },
  { command: 'data', description: 'Buy a data bundle', action: { start: 'data' } },
  { command: 'pin', description: 'Buy an exam pin', action: { start: 'pin' } },
  { command: 'cancel', description: 'Stop what you are doing', action: { nav: 'cancel' } },
  { command: 'help', description: 'What I can do', action: 'help' },
];

/** The answer to /help and to anything the bot cannot read (a photo, a sticker, an unknown command). */
export const HELP_TEXT = [
  'I move mobile money. Answer my questions by typing or with the buttons.',
  '',
  ...COMMANDS.map((c) => `/${c.command} - ${c.description}`),
].join('\n');

/** The action of a known command name (without the slash), or undefined. */
export function commandAction(name: string): CommandAction | undefined {
  return COMMANDS.find((c) => c.command === name.toLowerCase())?.action;
}
