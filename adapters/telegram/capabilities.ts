/**
 * What Telegram can do (ChannelCapabilities): the bot writes to the chat at any time; the chat's history keeps
 * what is typed, so no PIN is asked here; the user is a Telegram id, not a number.
 */
import type { ChannelCapabilities } from '../../src/conversation/types.js';

export const telegramCapabilities: ChannelCapabilities = {
  pushes: true,
  keepsForNextDial: false,
  asksPin: false,
  userIsNumber: false,
};
