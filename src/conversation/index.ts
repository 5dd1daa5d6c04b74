/** The conversation layer: engine, access policy and the services flows run on (its store: src/store). */
export { createEngine, type ConversationEngine, type EngineOptions } from './engine/engine.js';
export {
  AccessPolicy,
  demoPolicy,
  hashPin,
  loadAccessPolicy,
  type LoadPolicyOptions,
  type PolicyDocument,
  type Role,
} from './services/access-policy.js';
export { createServices, forgetFailedName, toFailure, type ServicesOptions } from './services/flow-services.js';
export { catalogue, createCatalogue, render, renderView, type Catalogue } from './flow/render.js';
export type {
  Address,
  Ahead,
  Channel,
  ChannelCapabilities,
  ConversationView,
  Decide,
  Engine,
  Inbound,
  Participant,
  Prompt,
  TurnDecision,
  TurnEngine,
} from './types.js';
