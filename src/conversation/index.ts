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
} from './calls/access-policy.js';
export { createFlowCalls, forgetFailedName, toFailure, type FlowCallsOptions } from './calls/flow-calls.js';
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
