/**
 * Every channel's capabilities as its adapter declares them, for the engine (EngineOptions.channels). A new
 * channel's adapter declares its own and is listed here (the type asks for every Channel).
 */
import type { Channel, ChannelCapabilities } from '../src/conversation/types.js';
import { slackCapabilities } from './slack/capabilities.js';
import { telegramCapabilities } from './telegram/capabilities.js';
import { ussdCapabilities } from './ussd/capabilities.js';
import { whatsappCapabilities } from './whatsapp/capabilities.js';

export const channelCapabilities: Readonly<Record<Channel, ChannelCapabilities>> = {
  ussd: ussdCapabilities,
  telegram: telegramCapabilities,
  slack: slackCapabilities,
  whatsapp: whatsappCapabilities,
};
