/**
 * What the flows ask of the directory of people (flows/calls.ts): a person changes their own PIN (Change
 * PIN, flows/change-pin.machine.ts) and makes a link code for a chat account (Link a chat app,
 * flows/link.machine.ts). Only a person of the directory's database may (not a `*` rule's, whose PIN is the
 * policy's); without that database (the policy alone, src/people/start.ts) they are refused `not_allowed`.
 *
 * A change of PIN: the person proves who they are (their PIN, checked as every PIN is, tries counted per
 * person; or after a reset the reset's one-time code, whose wrong tries count in the same per-person
 * counter, 3 then locked 15 minutes: kept in the database, src/people/limits.ts), then types the new PIN twice. Its first typing is checked
 * (src/people/pin-rules.ts) and kept only as a scrypt hash in the database (`pin_changes`, 10 minutes); the
 * second is compared with it there. Nothing here logs, returns or keeps a PIN or a code in clear.
 */
import type { FlowCalls } from '../../flows/calls.js';
import type { ServiceFailure } from '../../flows/types.js';
import { PIN_LOCK_SECONDS, PIN_MAX_ATTEMPTS, type AccessPolicy } from '../conversation/calls/access-policy.js';
import type { Channel } from '../conversation/types.js';
import type { Store } from '../store/types.js';
import type { Person } from './directory.js';
import { mayMakeLinkCode } from './link.js';
import type { People } from './people.js';
import { pinWeakness } from './pin-rules.js';
import { hashSecret, secretMatches } from './secrets.js';
import type { PeopleDirectory } from './start.js';

export type PersonCallName = 'startPinChange' | 'draftPin' | 'savePin' | 'makeLinkCode';
export type PersonCalls = Pick<FlowCalls, PersonCallName>;

export interface PersonServicesOptions {
  policy: AccessPolicy;
  store: Store;
  /** The directory's database; absent or without one, every call is refused `not_allowed`. */
  directory?: PeopleDirectory;
}

const refuse = (code: ServiceFailure['code'], message: string): ServiceFailure => ({ code, message });

export function personServices(o: PersonServicesOptions): PersonCalls {
  const { policy, store } = o;

  /** The active person of the database behind this user, and the database; refused otherwise. */
  async function ownPerson(input: { channel: string; userId: string }): Promise<{ person: Person; people: People }> {
    const person = policy.person(input.channel as Channel, input.userId);
    if (!person || person.status !== 'active' || policy.directory.person(person.id) === undefined)
      throw refuse('not_allowed', 'only a person of the directory has a PIN and links of their own');
    const opened = await o.directory?.open();
    if (!opened) throw refuse('not_allowed', 'the directory of people has no database here');
    return { person, people: opened.people };
  }

  /** The person's phone numbers (USSD and WhatsApp identities): a PIN may not be their end. */
  const numbersOf = (person: Person): string[] =>
    policy.directory
      .identitiesOf(person.id)
      .filter((i) => i.channel === 'ussd' || i.channel === 'whatsapp')
      .map((i) => i.userId);

  return {
    async startPinChange(input) {
      const { person, people } = await ownPerson(input);
      if (input.via === 'pin') {
        // As every PIN: tries counted per person, the lock, a reset PIN refused.
        await policy.verifyPin(store, { channel: input.channel as Channel, userId: input.userId, pin: input.secret });
        await people.beginPinChange(person.id);
        return;
      }
      if (!person.pinMustChange) throw refuse('not_allowed', 'no PIN reset is waiting for a code');
      const limits = policy.limitsIn(store);
      // Counted before the code is compared, as a PIN's tries are: no more than PIN_MAX_ATTEMPTS codes compared.
      const counted = await limits.countTry('pin', person.id, PIN_MAX_ATTEMPTS, PIN_LOCK_SECONDS);
      if (!counted.ok) throw refuse('pin_locked', 'too many wrong codes');
      const match = await people.matchPinCode(person.id, input.secret.replace(/\s/g, ''));
      if (match === 'expired') throw refuse('code_expired', 'the one-time code expired');
      if (match === 'wrong') {
        if (counted.total >= PIN_MAX_ATTEMPTS) {
          await policy.lockPin(limits, person.id, 'wrong one-time code');
          throw refuse('pin_locked', 'too many wrong codes');
        }
        throw refuse('code_wrong', `${PIN_MAX_ATTEMPTS - counted.total} attempts left`);
      }
      await limits.clearTries('pin', person.id);
      await people.beginPinChange(person.id, match.codeId);
    },

    async draftPin(input) {
      const { person, people } = await ownPerson(input);
      const weakness = pinWeakness(input.pin, numbersOf(person));
      if (weakness) throw refuse('pin_weak', weakness);
      if (person.pin && (await secretMatches(input.pin, person.pin))) throw refuse('pin_weak', 'current');
      if (!(await people.draftPin(person.id, hashSecret(input.pin))))
        throw refuse('code_expired', 'no change of PIN is under way');
    },

    async savePin(input) {
      const { person, people } = await ownPerson(input);
      const result = await people.finishPinChange(person.id, input.pin);
      if (result === 'mismatch') throw refuse('pin_mismatch', 'the two PINs differ');
      if (result === 'expired') throw refuse('code_expired', 'no change of PIN is under way');
      // The tries went with the change (people.ts finishPinChange); the store's too, where they are kept there.
      await policy.limitsIn(store).clearTries('pin', person.id);
      // This process applies it at once; the others at their next look.
      await o.directory?.changed();
    },

    async makeLinkCode(input) {
      const { person, people } = await ownPerson(input);
      if (!(await mayMakeLinkCode(policy.limitsIn(store), person.id)))
        throw refuse('too_many_codes', 'too many link codes made');
      return people.linkCode(person.id);
    },
  };
}
