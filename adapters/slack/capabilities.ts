/**
 * What Slack can do (ChannelCapabilities): the app writes to the conversation at any time; its history keeps
 * what is typed, so no PIN is asked here; the user is a Slack id, not a number.
 */
import type { ChannelCapabilities } from '../../src/conversation/types.js';

export const slackCapabilities: ChannelCapabilities = {
  pushes: true,
  keepsForNextDial: false,
  asksPin: false,
  userIsNumber: false,
};
