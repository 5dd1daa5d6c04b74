/**
 * The directory of people in the database, on PostgreSQL and PGlite: the policy import (idempotent, never
 * undoing a page change), changes journalled with who and before/after and no secret, the version every
 * process polls (a change in one process applies in another's policy), one-time PIN codes and link codes
 * (single use, expiring, a wrong one saying nothing).
 */
import { describe, expect, it } from 'vitest';
import {
  AccessPolicy,
  hashPin,
  peopleOfPolicy,
  type PolicyDocument,
} from '../../src/conversation/calls/access-policy.js';
import { People, PIN_CODE_DIGITS } from '../../src/people/people.js';
import type { PeopleSchema } from '../../src/people/schema.js';
import { PeopleSync } from '../../src/people/sync.js';
import { createLogger } from '../../src/log.js';
import type { Kysely } from 'kysely';
import { forEachDatabase } from '../journal/databases.js';

const pin = hashPin('4821');
const POLICY: PolicyDocument = {
  roles: {
    teller: { flows: ['pay', 'check'], perPaymentLimit: { UGX: '300000' }, dailyLimit: { UGX: '500000' } },
    viewer: { flows: ['check'], perPaymentLimit: {}, dailyLimit: {} },
  },
  users: {
    ussd: { '+256772000001': { role: 'teller', person: 'amina', pin }, '+256772000009': { role: 'teller', pin } },
    whatsapp: { '+256772000001': { role: 'teller', person: 'amina' } },
    telegram: { '*': { role: 'viewer' } },
    slack: {},
  },
};

const rejection = async (promise: Promise<unknown>) =>
  promise.then(
    () => 'resolved',
    (e: unknown) => e,
  );

forEachDatabase('people', (open, engine) => {
  let clock = Date.parse('2026-11-26T10:00:00Z');
  const people = async () => new People((await open()).db as unknown as Kysely<PeopleSchema>, { now: () => clock });

  it('imports the policy once: a second import writes nothing, and a page change survives it', async () => {
    const p = await people();
    const policy = new AccessPolicy(POLICY);
    expect(await p.importPolicy(peopleOfPolicy(policy.document))).toEqual({ persons: 2, identities: 3 });
    const version = await p.version();
    expect(await p.importPolicy(peopleOfPolicy(policy.document))).toEqual({ persons: 0, identities: 0 });
    expect(await p.version()).toBe(version);
    await p.setRole('operator:ops', 'amina', 'viewer');
    await p.importPolicy(peopleOfPolicy(policy.document));
    expect((await p.get('amina'))?.role).toBe('viewer');
    const directory = await p.load(policy.directory.wildcards);
    expect(directory.find('whatsapp', '256772000001')?.id).toBe('amina');
    expect(directory.find('telegram', '55')).toMatchObject({ id: 'telegram:55', role: 'viewer' });
    expect(directory.version).toBe(await p.version());
    await p.setRole('operator:ops', 'amina', 'teller');
  });

  it('journals every change with who, before and after, and never a PIN, code or hash', async () => {
    const p = await people();
    const added = await p.add('operator:ops', {
      name: 'Brian',
      role: 'teller',
      identities: [{ channel: 'slack', userId: 'UBRIAN' }],
    });
    await p.setStatus('operator:ops', added.id, 'suspended');
    const { code } = await p.resetPin('operator:alice', added.id);
    const history = await p.history(added.id);
    expect(history.map((h) => [h.action, h.by])).toEqual([
      ['added', 'operator:ops'],
      ['suspended', 'operator:ops'],
      ['PIN reset', 'operator:alice'],
    ]);
    expect(history[1]).toMatchObject({ before: { status: 'active' }, after: { status: 'suspended' } });
    expect(history[2]).toMatchObject({ before: { pin: 'none' }, after: { pin: 'must change' } });
    const raw = JSON.stringify(await (await open()).db.selectFrom('operation_events').selectAll().execute());
    expect(raw).not.toContain(code);
    expect(raw).not.toContain('scrypt$');
    // An identity belongs to one person.
    expect(
      await rejection(
        p.add('operator:ops', {
          name: 'Mallory',
          role: 'teller',
          identities: [{ channel: 'slack', userId: 'UBRIAN' }],
        }),
      ),
    ).toMatchObject({
      status: 409,
      message: 'slack UBRIAN already belongs to someone',
    });
  });

  it('applies a change made by another process within its next look', async () => {
    const here = await people();
    const there = new People((await open({ fresh: engine === 'postgres' })).db as unknown as Kysely<PeopleSchema>);
    const policy = new AccessPolicy(POLICY);
    await here.importPolicy(peopleOfPolicy(policy.document));
    const sync = new PeopleSync({ people: here, policy, logger: createLogger('silent') });
    await sync.refresh(true);
    expect(policy.role('ussd', '+256772000001')).toBeDefined();
    await there.setStatus('operator:ops', 'amina', 'suspended');
    expect(policy.role('whatsapp', '256772000001')).toBeDefined();
    await sync.refresh();
    expect(policy.role('whatsapp', '256772000001')).toBeUndefined();
    expect(policy.role('ussd', '+256772000001')).toBeUndefined();
    await there.setStatus('operator:ops', 'amina', 'active');
    await sync.refresh();
    expect(policy.role('ussd', '+256772000001')).toBeDefined();
  });

  it('sets a PIN from a one-time code once, the new PIN typed twice; never with a wrong, used or expired code', async () => {
    const p = await people();
    const person = await p.add('operator:ops', {
      name: 'Carol',
      role: 'teller',
      identities: [{ channel: 'ussd', userId: '+256772000042' }],
    });
    const { code } = await p.resetPin('operator:ops', person.id);
    expect(code).toMatch(new RegExp(`^\\d{${PIN_CODE_DIGITS}}$`));
    expect(await p.matchPinCode(person.id, '00000000')).toBe('wrong');
    const match = await p.matchPinCode(person.id, code);
    if (typeof match === 'string') throw new Error(`the code did not match: ${match}`);
    // Nothing to finish before a change began, nor a draft before the PIN was typed once.
    expect(await p.draftPin(person.id, hashPin('5930'))).toBe(false);
    await p.beginPinChange(person.id, match.codeId);
    expect(await p.finishPinChange(person.id, '5930')).toBe('expired');
    expect(await p.draftPin(person.id, hashPin('5930'))).toBe(true);
    // Typed differently the second time: the draft goes, the PIN is not set.
    expect(await p.finishPinChange(person.id, '5931')).toBe('mismatch');
    expect(await p.finishPinChange(person.id, '5930')).toBe('expired');
    expect(await p.get(person.id)).toMatchObject({ pin: 'must change' });
    expect(await p.draftPin(person.id, hashPin('5930'))).toBe(true);
    expect(await p.finishPinChange(person.id, '5930')).toBe('set');
    expect(await p.get(person.id)).toMatchObject({ pin: 'set' });
    const history = await p.history(person.id);
    expect(history.at(-1)).toMatchObject({ action: 'PIN set with a one-time code', by: 'person' });
    expect(JSON.stringify(history)).not.toMatch(/5930|scrypt/);
    // Used: the code is no longer found; a change begun with it cannot set a PIN again.
    expect(await p.matchPinCode(person.id, code)).toBe('wrong');
    await p.beginPinChange(person.id, match.codeId);
    await p.draftPin(person.id, hashPin('7391'));
    expect(await p.finishPinChange(person.id, '7391')).toBe('expired');
    // Expired after 24 hours, even when the change began before.
    const again = await p.resetPin('operator:ops', person.id);
    const fresh = await p.matchPinCode(person.id, again.code);
    if (typeof fresh === 'string') throw new Error(`the code did not match: ${fresh}`);
    await p.beginPinChange(person.id, fresh.codeId);
    clock += 24 * 3600_000 + 1;
    expect(await p.matchPinCode(person.id, again.code)).toBe('expired');
    expect(await p.draftPin(person.id, hashPin('7391'))).toBe(false);
    expect(await p.get(person.id)).toMatchObject({ pin: 'must change' });
  });

  it('ends a change of PIN under way when the PIN is reset meanwhile', async () => {
    const p = await people();
    const person = await p.add('operator:ops', {
      name: 'Eve',
      role: 'teller',
      identities: [{ channel: 'ussd', userId: '+256772000043' }],
    });
    await p.resetPin('operator:ops', person.id);
    await p.beginPinChange(person.id);
    await p.draftPin(person.id, hashPin('5930'));
    await p.resetPin('operator:ops', person.id);
    expect(await p.finishPinChange(person.id, '5930')).toBe('expired');
    expect(await p.get(person.id)).toMatchObject({ pin: 'must change' });
  });

  it('links a chat account with a link code once, within 10 minutes; a wrong code says nothing', async () => {
    const p = await people();
    const person = await p.add('operator:ops', {
      name: 'Dan',
      role: 'teller',
      identities: [{ channel: 'ussd', userId: '+256772000077' }],
    });
    const code = await p.linkCode(person.id);
    expect(code).toMatch(/^[A-Z2-9]{10}$/);
    expect(await p.useLinkCode('ABCDEFGHJK', 'telegram', '9001')).toBeNull();
    const linked = await p.useLinkCode(code.toLowerCase(), 'telegram', '9001');
    expect(linked?.identities).toContainEqual({ channel: 'telegram', userId: '9001' });
    expect(linked?.preferredChat).toBe('telegram:9001');
    expect(await p.useLinkCode(code, 'slack', 'UDAN')).toBeNull();
    const late = await p.linkCode(person.id);
    clock += 10 * 60_000 + 1;
    expect(await p.useLinkCode(late, 'slack', 'UDAN')).toBeNull();
  });
});

describe('peopleOfPolicy', () => {
  it('makes the demo policy all rules and no persons', () => {
    const { persons, identities, wildcards } = peopleOfPolicy(new AccessPolicy(POLICY).document);
    expect(persons.map((p) => p.id).sort()).toEqual(['amina', 'ussd:+256772000009']);
    expect(identities).toHaveLength(3);
    expect(Object.keys(wildcards)).toEqual(['telegram']);
  });
});
