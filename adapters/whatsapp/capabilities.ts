/**
 * What WhatsApp can do (ChannelCapabilities): messages reach the chat at any time; its history keeps what is
 * typed, so no PIN is asked here. The user is a `wa_id` (digits, no `+`): the number comes with each message
 * (Inbound.phoneNumber), not as the user id.
 */
import type { ChannelCapabilities } from '../../src/conversation/types.js';

export const whatsappCapabilities: ChannelCapabilities = {
  pushes: true,
  keepsForNextDial: false,
  asksPin: false,
  userIsNumber: false,
};
