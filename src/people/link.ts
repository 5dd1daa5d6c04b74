/**
 * A person links a chat account to themselves with a link code (src/people/people.ts linkCode: at least 8
 * characters, single use, 10 minutes), sent to the bot: Telegram `/link CODE`, WhatsApp `link CODE`, Slack
 * `/momo link CODE`. The command is answered here, before the conversation engine (the account sending it is
 * not known yet, so the engine would refuse it).
 *
 * - Tries are counted per source (the chat account: all that is known of whoever types a wrong code) before
 *   the code is looked up, in the database (src/people/limits.ts, scope `link-tries`): {@link LINK_TRIES} in
 *   {@link LINK_WINDOW_SECONDS}; past it, "too many tries", and no code is looked up.
 * - Guesses are counted per code too, in the database, whichever accounts make them (src/people/people.ts
 *   useLinkCode): a guess names the code it aims at by its first characters, and a code that took
 *   LINK_CODE_TRIES wrong guesses is used up. Many accounts guessing in turn get no more tries at one
 *   code than one account.
 * - A wrong, used or expired code gets one answer, whatever the case: it says nothing about whether a person
 *   or a code exists.
 * - Codes made per person are limited where they are made ({@link LINK_CODES_PER_PERSON} per window; scope
 *   `link-made`).
 * - The code is never logged.
 */
import type { Limits } from '../conversation/calls/limits.js';
import type { Channel, Engine, Inbound, Prompt } from '../conversation/types.js';
import { maskUserId, type Logger } from '../log.js';
import { PeopleError } from './people.js';
import type { PeopleDirectory } from './start.js';

/** Link codes one chat account may try per window. */
export const LINK_TRIES = 5;
/** Link codes one person may make per window. */
export const LINK_CODES_PER_PERSON = 5;
/** The window of both: 15 minutes. */
export const LINK_WINDOW_SECONDS = 15 * 60;

/** `link CODE` (any case; Slack's `/momo link CODE` and Telegram's `/link CODE` arrive as this text). */
const LINK = /^\s*\/?link\s+([A-Za-z0-9-]{1,40})\s*$/i;

const CHANNEL_NAMES: Record<Channel, string> = {
  ussd: 'USSD',
  telegram: 'Telegram',
  slack: 'Slack',
  whatsapp: 'WhatsApp',
};
export const LINK_WRONG =
  'That code did not work: a link code works once, for 10 minutes. Dial the USSD menu "Link a chat app" for a new one.';
export const LINK_TOO_MANY = 'Too many link codes tried from this account. Try again in 15 minutes.';

/** The code of a link command, or undefined for any other message. */
export function linkCodeOf(inbound: Pick<Inbound, 'channel' | 'text'>): string | undefined {
  if (inbound.channel === 'ussd' || typeof inbound.text !== 'string') return undefined;
  return LINK.exec(inbound.text)?.[1];
}

/** Answers link commands of chat channels; every other message goes to `engine`. Changes `engine.handle` in place. */
export function withLinkCommand<E extends Engine>(engine: E, o: { directory: PeopleDirectory; logger: Logger }): E {
  const handle = engine.handle.bind(engine);
  engine.handle = async (inbound: Inbound): Promise<Prompt> => {
    const code = linkCodeOf(inbound);
    if (code === undefined) return handle(inbound);
    return { text: await link(code, inbound, o), final: true };
  };
  return engine;
}

async function link(
  code: string,
  inbound: Inbound,
  o: { directory: PeopleDirectory; logger: Logger },
): Promise<string> {
  const who = { channel: inbound.channel, user: maskUserId(inbound.channel, inbound.userId) };
  // Without the directory's database no code can match (and there are no tries to count).
  const opened = await o.directory.open();
  if (!opened) return LINK_WRONG;
  const counted = await opened.limits.countTry(
    'link-tries',
    `${inbound.channel}:${inbound.userId}`,
    LINK_TRIES,
    LINK_WINDOW_SECONDS,
  );
  if (!counted.ok) {
    o.logger.warn(who, 'people: link code refused, too many tries from this account');
    return LINK_TOO_MANY;
  }
  try {
    const person = await opened.people.useLinkCode(code, inbound.channel, inbound.userId);
    if (!person) {
      o.logger.info(who, 'people: a link code did not match');
      return LINK_WRONG;
    }
    await o.directory.changed();
    o.logger.info({ ...who, person: person.id }, 'people: chat account linked');
    return `Linked: this ${CHANNEL_NAMES[inbound.channel]} account is now ${person.name}'s. Outcomes of your USSD payments are told here too.`;
  } catch (err) {
    if (err instanceof PeopleError && err.status === 409)
      return 'This account is already linked to someone. Ask the operator to move it.';
    throw err;
  }
}

/** Counts a link code made for `person`; false past {@link LINK_CODES_PER_PERSON} in the window. */
export async function mayMakeLinkCode(limits: Limits, person: string): Promise<boolean> {
  return (await limits.countTry('link-made', person, LINK_CODES_PER_PERSON, LINK_WINDOW_SECONDS)).ok;
}
