/**
 * What USSD can do (ChannelCapabilities): one screen per request in a session the network ends, so nothing is
 * pushed and a missed answer waits for the next dial; the screen keeps nothing, so PINs are asked here; the
 * user is their phone number.
 */
import type { ChannelCapabilities } from '../../src/conversation/types.js';

export const ussdCapabilities: ChannelCapabilities = {
  pushes: false,
  keepsForNextDial: true,
  asksPin: true,
  userIsNumber: true,
};
