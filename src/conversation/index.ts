/** The conversation layer: engine, session stores, access policy and the services flows run on. */
export { createEngine, type ConversationEngine, type EngineOptions } from './engine.js';
export { createSessionStore, type SessionStoreOptions } from './store.js';
export { MemoryStore, type MemoryStoreOptions } from './memory-store.js';
export { RedisStore, type RedisStoreOptions } from './redis-store.js';
export { AccessPolicy, demoPolicy, hashPin, loadAccessPolicy, type LoadPolicyOptions, type PolicyDocument, type Role } from './policy.js';
export { createServices, toFailure, type ServicesOptions } from './services.js';
export { catalogue, createCatalogue, render, renderView, type Catalogue } from './render.js';
export type { Address, Channel, Engine, Inbound, Participant, Prompt, SessionStore, TurnDecision, TurnEngine } from './types.js';
