/**
 * Payments held for an approver (maker/checker), in the session store (Redis with REDIS_URL, else memory).
 *
 * - `approval:<id>`: the held payment: what the maker confirmed (the create input, with the Duplicate-Check-Key
 *   made when they confirmed), its state and the decision. Every change is a compare-and-set from the state
 *   read, so a decision is taken once: two checkers pressing at once, or one pressing twice, change it once.
 * - `approvals:open:{o<n>}` (8 parts by id, keys.ts): the held payments the sweep must look at, each with when: a pending one at its expiry,
 *   an approved one whose sending has no outcome yet a little later (its process may have died: it is sent
 *   again under the same key, which the service deduplicates).
 */
import type { FlowServices } from '../../flows/services.js';
import { changeStored } from '../conversation/store/change-stored.js';
import { DueList } from '../conversation/store/due-list.js';
import { keys } from '../conversation/store/keys.js';
import type { Channel, SessionStore } from '../conversation/types.js';

/** The create input the maker's flow gave createPayment (its key, metadata and names). */
export type PaymentInput = Parameters<FlowServices['createPayment']>[0];

export type HeldState = 'pending' | 'approved' | 'rejected' | 'expired';

/** What sending an approved payment came to. */
export type SendOutcome =
  | { kind: 'sent'; id: string; state: string }
  | { kind: 'sentBefore' }
  | { kind: 'unconfirmed' }
  | { kind: 'refused'; reason: string };

export interface Decision {
  /** The checker's channel and user id. */
  channel: Channel;
  userId: string;
  /** The checker's name as their channel gave it (shown to the maker), else the id. */
  name: string;
  /** When, ms since the epoch. */
  at: number;
  /** Why it was rejected. */
  reason?: string;
}

export interface HeldPayment {
  id: string;
  /** The Duplicate-Check-Key made when the maker confirmed: the approved payment is created under it. */
  key: string;
  /** Who made it: the identity that confirmed, and the person it belonged to then (src/people). */
  maker: { channel: Channel; userId: string; person?: string };
  payment: PaymentInput;
  heldAt: number;
  expiresAt: number;
  state: HeldState;
  decision?: Decision;
  outcome?: SendOutcome;
  /** Where the approval message is (Slack channel and ts), once posted. */
  board?: { channel: string; ts: string };
}

/** A decided payment is kept 30 days, for a late press on its message and for the record. */
const HELD_TTL_SECONDS = 30 * 24 * 3600;
/** Most payments waiting at once: a flood of holds is refused before anything is posted. */
const MAX_OPEN = 5000;

export class HeldPayments {
  private readonly open: DueList;

  constructor(private readonly store: SessionStore) {
    this.open = new DueList(store, keys.approvalsOpen, keys.approvalsOpenParts, MAX_OPEN);
  }

  async get(id: string): Promise<HeldPayment | null> {
    if (!/^[0-9a-f]{1,64}$/.test(id)) return null;
    return ((await this.store.get(keys.approval(id)))?.snapshot as HeldPayment | undefined) ?? null;
  }

  /** Writes a new held payment; the one already held under its id when there is one (a repeated create). */
  async create(held: HeldPayment): Promise<{ created: boolean; held: HeldPayment }> {
    if ((await this.store.set(keys.approval(held.id), held, null, HELD_TTL_SECONDS)) !== null)
      return { created: true, held };
    return { created: false, held: (await this.get(held.id)) ?? held };
  }

  /**
   * Changes the held payment with compare-and-set, read again after a conflict. `change` answers the new
   * record, or null to leave it as it is. Returns the record before and after (after is null when unchanged).
   */
  async update(
    id: string,
    change: (held: HeldPayment) => HeldPayment | null,
  ): Promise<{ before: HeldPayment | null; after: HeldPayment | null }> {
    const { before, after } = await changeStored<HeldPayment>(
      this.store,
      keys.approval(id),
      HELD_TTL_SECONDS,
      (held) => (held ? change(held) : null),
      'the held payment',
    );
    return { before: before ?? null, after };
  }

  /** Lists `id` for the sweep at `due` (ms), or takes it off (`due` null). False when the list is full. */
  schedule(id: string, due: number | null): Promise<boolean> {
    return this.open.schedule(id, due);
  }

  /** The ids listed for the sweep whose time has come. */
  due(now: number): Promise<string[]> {
    return this.open.due(now);
  }

  /** Claims the sending of an approved payment for `seconds`: one process sends it at a time. */
  claimSending(id: string, seconds: number): Promise<boolean> {
    return this.store.claim(keys.approvalSending(id), seconds);
  }
}
