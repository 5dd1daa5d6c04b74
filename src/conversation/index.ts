/** The conversation layer: engine, session stores, access policy and the services flows run on. */
export { createEngine, type ConversationEngine, type EngineOptions } from './engine/engine.js';
export { createSessionStore, type SessionStoreOptions } from './store/create-store.js';
export { MemoryStore, type MemoryStoreOptions } from './store/memory-store.js';
export { RedisStore, type RedisStoreOptions } from './store/redis-store.js';
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
  ConversationView,
  Decide,
  Engine,
  Inbound,
  Participant,
  Prompt,
  SessionStore,
  TurnDecision,
  TurnEngine,
} from './types.js';
