/**
 * What every part of the sandbox shares: the records, the clock, the renderer, the event bus and the
 * options that change behaviour. Built once by createSandbox().
 */
import type { Response } from 'express';
import type { Logger } from 'pino';
import type { SandboxClock } from './clock.js';
import { detailError } from './errors.js';
import type { Faults } from './faults.js';
import type { Notifications } from './notifications.js';
import { timestamp, type Renderer } from './render.js';
import { LATEST_VERSION, type Organization, type SandboxState, type Version } from './state.js';

export interface SandboxContext {
  state: SandboxState;
  clock: SandboxClock;
  render: Renderer;
  notifications: Notifications;
  log: Logger;
  /** See SandboxOptions.allowHttpWebhooks. */
  allowHttpWebhooks: boolean;
  /** Faults turned on by the controls (faults.ts). */
  faults: Faults;
}

/** The version an organization's own notifications and events are rendered in. */
export function savedVersion(ctx: SandboxContext, organization: number): Version {
  return ctx.state.organizations.get(organization)?.version ?? LATEST_VERSION;
}

/** Keeps an SMS the service would have sent (controls.sms()). */
export function recordSms(ctx: SandboxContext, to: string, text: string): void {
  ctx.state.sms.push({ to, text, at: timestamp(ctx.clock.now()) });
}

/** What the main API's middleware leaves for the handlers. */
export interface ApiLocals {
  org: Organization;
  version: Version;
}

export const apiLocals = (res: Response): ApiLocals => res.locals as ApiLocals;

/** The record with this id: 404 when there is none, 403 when it belongs to another organization. */
export function owned<T extends { organization: number | null }>(
  records: Map<number, T>,
  id: string | undefined,
  org: Organization,
): T {
  const record = id !== undefined && /^\d+$/.test(id) ? records.get(Number(id)) : undefined;
  if (!record) throw detailError(404, 'Not found.');
  if (record.organization !== org.id) throw detailError(403, 'You do not have permission to perform this action.');
  return record;
}
