/**
 * The directory of people as one process holds it: persons, the identities that name them on each channel,
 * and the `*` rules of the access policy for everyone else. It is an immutable snapshot: the hot path reads it
 * with no I/O, and a change (the People page, a link, a new PIN) builds a new one that replaces it whole
 * (./sync.ts), so a reader never sees half a change.
 *
 * - A person has a display name, one role, a status (`active`, `suspended`), a PIN hash (`scrypt$salt$hash`)
 *   with a must-change state (set by a reset: no money until they chose a new one) and a locked-until time,
 *   and a preferred chat (`<channel>:<conversationId>`) where outcomes of their USSD payments are also told.
 * - An identity is a channel's user id (USSD phone number in `+` form, WhatsApp `wa_id` in digits, Telegram
 *   user id, Slack user id). Each identity belongs to one person.
 * - Someone matched only by a policy's `*` rule is a person of their own, named `<channel>:<user id>`, who is
 *   in no table (the demo's users); their totals and PIN tries are theirs alone, as before persons existed.
 */
import type { Channel } from '../conversation/types.js';

export const CHANNELS: readonly Channel[] = ['ussd', 'telegram', 'slack', 'whatsapp'];

export type PersonStatus = 'active' | 'suspended';

export interface Person {
  /** Stable id: the policy's `person` name, `<channel>:<user id>` for an ungrouped entry, or one the page made. */
  id: string;
  name: string;
  role: string;
  status: PersonStatus;
  /** `scrypt$salt$hash` of the PIN; absent: none set. */
  pin?: string;
  /** The PIN was reset: the person sets a new one (with the one-time code) before moving money. */
  pinMustChange?: boolean;
  /** Locked by an operator or by wrong tries until then (ms since the epoch). */
  pinLockedUntil?: number;
  /** `<channel>:<conversationId>` of the chat where outcomes of their USSD payments are also told. */
  preferredChat?: string;
}

export interface Identity {
  channel: Channel;
  /** The channel's user id, normalised by {@link identityId}. */
  userId: string;
  person: string;
}

/** A policy's `*` rule: everyone else on that channel, each their own person. */
export interface Wildcard {
  role: string;
  pin?: string;
}

/** The one spelling of a channel's user id: a WhatsApp `wa_id` without its `+`, others as given. */
export function identityId(channel: Channel, userId: string): string {
  const trimmed = userId.trim();
  return channel === 'whatsapp' && trimmed.startsWith('+') ? trimmed.slice(1) : trimmed;
}

const identityKey = (channel: Channel, userId: string): string => `${channel}\u0000${userId}`;

export class Directory {
  private readonly byId = new Map<string, Person>();
  private readonly byIdentity = new Map<string, Identity>();
  private readonly ofPerson = new Map<string, Identity[]>();

  /**
   * @param version - the database's people version this snapshot reflects (0: the policy alone).
   * @param wildcards - the policy's `*` rules per channel.
   */
  constructor(
    readonly version: number,
    persons: Iterable<Person>,
    identities: Iterable<Identity>,
    readonly wildcards: Partial<Record<Channel, Wildcard>> = {},
  ) {
    for (const person of persons) this.byId.set(person.id, Object.freeze({ ...person }));
    for (const identity of identities) {
      if (!this.byId.has(identity.person)) continue;
      const frozen = Object.freeze({ ...identity, userId: identityId(identity.channel, identity.userId) });
      this.byIdentity.set(identityKey(frozen.channel, frozen.userId), frozen);
      const list = this.ofPerson.get(frozen.person) ?? [];
      list.push(frozen);
      this.ofPerson.set(frozen.person, list);
    }
  }

  /** The person behind a channel's user: their identity's, else the channel's `*` rule's, else undefined. */
  find(channel: Channel, userId: string): Person | undefined {
    const id = identityId(channel, userId);
    const identity = this.byIdentity.get(identityKey(channel, id));
    if (identity) return this.byId.get(identity.person);
    const rule = this.wildcards[channel];
    if (!rule) return undefined;
    return {
      id: `${channel}:${id}`,
      name: id,
      role: rule.role,
      status: 'active',
      ...(rule.pin ? { pin: rule.pin } : {}),
    };
  }

  /** True when the user is named by an identity (not only matched by a `*` rule). */
  isListed(channel: Channel, userId: string): boolean {
    return this.byIdentity.has(identityKey(channel, identityId(channel, userId)));
  }

  person(id: string): Person | undefined {
    return this.byId.get(id);
  }

  identitiesOf(person: string): readonly Identity[] {
    return this.ofPerson.get(person) ?? [];
  }

  persons(): Person[] {
    return [...this.byId.values()];
  }

  identities(): Identity[] {
    return [...this.byIdentity.values()];
  }
}
