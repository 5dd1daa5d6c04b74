/**
 * The bot's commands: what setMyCommands registers, what /help lists, and what each one asks of the engine.
 * One table, so the three never drift apart.
 */
import type { Lang } from '../../flows/types.js';
import { render } from '../../src/conversation/flow/render.js';
import type { Inbound } from '../../src/conversation/types.js';

/** What a command asks for: part of an Inbound for the engine, or the help text (no engine call). */
export type CommandAction = Pick<Inbound, 'start' | 'nav'> | 'help';

export interface Command {
  command: string;
  action: CommandAction;
}

/** A command's description in a language (the catalogue's `telegram.command.<command>`). */
export const describeCommand = (command: string, lang: Lang = 'en'): string =>
  render({ key: `telegram.command.${command}` }, lang);

export const COMMANDS: readonly Command[] = [
  { command: 'start', action: { nav: 'home' } },
  { command: 'pay', action: { start: 'pay' } },
  { command: 'request', action: { start: 'request' } },
  { command: 'check', action: { start: 'check' } },
  { command: 'data', action: { start: 'data' } },
  { command: 'pin', action: { start: 'pin' } },
  { command: 'cancel', action: { nav: 'cancel' } },
  { command: 'help', action: 'help' },
];

/**
 * The answer to /help and to anything the bot cannot read (a photo, a sticker, an unknown command), in the
 * user's language; the commands are Telegram's, the same in every language.
 */
export const helpText = (lang: Lang = 'en'): string =>
  [
    render({ key: 'telegram.help' }, lang),
    '',
    ...COMMANDS.map((c) => `/${c.command} - ${describeCommand(c.command, lang)}`),
  ].join('\n');

/** The English help, as Telegram's own command list (setMyCommands) gives the descriptions. */
export const HELP_TEXT = helpText('en');

/** The action of a known command name (without the slash), or undefined. */
export function commandAction(name: string): CommandAction | undefined {
  return COMMANDS.find((c) => c.command === name.toLowerCase())?.action;
}
