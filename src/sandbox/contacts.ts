/**
 * Contacts: create, get, list, patch, plus the find-or-create and instant verification that payments and
 * collection requests share.
 *
 * Team choice where the spec is silent: POST /api/contacts with a phone number that already has a contact
 * in the organization answers 200 with that existing contact (201 for a new one); with metadata `sync=1`
 * the answer carries the verification fields in both cases ("or an existing contact is read"). The pay
 * flow verifies a name this way without spending one of its 30 reads a minute.
 */
import { Router } from 'express';
import { z } from 'zod';
import { apiLocals, owned, type SandboxContext } from './context.js';
import { lookupSubscriber, nameMatchScore } from './directory.js';
import { methodNotAllowed, validate } from './errors.js';
import { email, metadata, nationalIdType, optionalText, phone, text } from './fields.js';
import { dateRange, exact, list, phoneExact, type Filters } from './listing.js';
import type { Contact, Organization } from './state.js';

/** Runs the network check for the contact's name and number and keeps the result on the contact. */
export function verifyContact(ctx: SandboxContext, contact: Contact): void {
  const subscriber = lookupSubscriber(contact.phone_number);
  contact.verification = {
    phone_is_supported: subscriber.supported ? 'yes' : 'no',
    phone_is_mm_registered: subscriber.registered ? 'yes' : 'no',
    name_on_network: subscriber.nameOnNetwork,
    name_matches_network_status: subscriber.registered ? 'checked' : 'not_checked',
    name_matches_network_score: nameMatchScore(`${contact.first_name} ${contact.last_name}`, subscriber.nameOnNetwork),
    network_name: subscriber.network,
  };
  contact.modified = ctx.clock.now();
}

export interface NewContact {
  phone_number: string;
  first_name: string;
  last_name: string;
  email?: string | null;
  type?: string;
  metadata?: Record<string, unknown> | null;
  national_id?: string | null;
  national_id_type?: string | null;
}

/** The organization's contact for this number, created (with a contact.created event) when new. */
export function findOrCreateContact(
  ctx: SandboxContext,
  org: Organization,
  input: NewContact,
): { contact: Contact; created: boolean } {
  const existing = ctx.state.contactByPhone(org.id, input.phone_number);
  if (existing) return { contact: existing, created: false };
  const now = ctx.clock.now();
  const contact: Contact = {
    id: ctx.state.nextId('contact'),
    organization: org.id,
    first_name: input.first_name,
    last_name: input.last_name,
    email: input.email ?? null,
    phone_number: input.phone_number,
    type: input.type ?? 'other',
    status: 'active',
    metadata: input.metadata ?? null,
    national_id: input.national_id ?? null,
    national_id_type: input.national_id_type ?? null,
    verification: null,
    created: now,
    modified: now,
  };
  ctx.state.contacts.set(contact.id, contact);
  ctx.notifications.emit(org.id, 'contact.created', ctx.render.contact(contact));
  return { contact, created: true };
}

const wantsSync = (m: Record<string, unknown> | undefined) => m !== undefined && (m.sync === 1 || m.sync === '1');

export const contactCreateSchema = z.object({
  phone_number: phone,
  first_name: text(255),
  last_name: text(255),
  email,
  type: optionalText(50),
  metadata,
});

export const contactUpdateSchema = z.object({
  first_name: optionalText(255),
  last_name: optionalText(255),
  email,
  national_id: optionalText(50),
  national_id_type: nationalIdType,
});

export const contactFilters: Filters<Contact> = {
  first_name: exact((c) => c.first_name),
  last_name: exact((c) => c.last_name),
  email: exact((c) => c.email),
  phone_number: phoneExact((c) => c.phone_number),
  ...dateRange('created', (c) => c.created),
};

export function contactsRouter(ctx: SandboxContext): Router {
  const router = Router();
  router
    .route('/contacts')
    .get((req, res) => {
      const { org } = apiLocals(res);
      const mine = [...ctx.state.contacts.values()].filter((c) => c.organization === org.id);
      res.json(list(req, mine, contactFilters, (c) => ctx.render.contact(c)));
    })
    .post((req, res) => {
      const { org } = apiLocals(res);
      const input = validate(contactCreateSchema, req.body);
      const { contact, created } = findOrCreateContact(ctx, org, input);
      if (wantsSync(input.metadata)) verifyContact(ctx, contact);
      res.status(created ? 201 : 200).json(ctx.render.contact(contact));
    })
    .all(methodNotAllowed('GET', 'POST'));
  router
    .route('/contacts/:id')
    .get((req, res) => {
      res.json(ctx.render.contact(owned(ctx.state.contacts, req.params.id, apiLocals(res).org)));
    })
    .patch((req, res) => {
      const contact = owned(ctx.state.contacts, req.params.id, apiLocals(res).org);
      const changes = validate(contactUpdateSchema, req.body);
      for (const [key, value] of Object.entries(changes)) {
        if (value !== undefined) (contact as unknown as Record<string, unknown>)[key] = value;
      }
      contact.modified = ctx.clock.now();
      res.json(ctx.render.contact(contact));
    })
    .all(methodNotAllowed('GET', 'PATCH'));
  return router;
}
