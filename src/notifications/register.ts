/**
 * Makes sure exactly one webhook per event type points at our receiver. It lists first and creates only
 * what is missing: the service stores URLs per organization, so a second registration means every
 * notification arrives twice. It cannot delete (the API has no delete): extra ones are reported.
 */
import type { MomoClient } from '../momo/index.js';
import type { Logger } from '../log.js';
import { EVENT_TYPES } from './events.js';

export interface RegistrationResult {
  created: string[];
  present: string[];
  /** Event types with more than one webhook at our URL: delete the extras in the web portal. */
  duplicated: string[];
}

export async function ensureWebhooks(client: MomoClient, target: string, logger: Logger): Promise<RegistrationResult> {
  const result: RegistrationResult = { created: [], present: [], duplicated: [] };
  for (const event of EVENT_TYPES) {
    let matching = 0;
    for await (const hook of client.webhooks.listAll({ event })) {
      if (hook.target === target && hook.event === event) matching++;
    }
    if (matching === 0) {
      await client.webhooks.create({ event, target });
      result.created.push(event);
    } else {
      result.present.push(event);
      if (matching > 1) result.duplicated.push(event);
    }
  }
  if (result.duplicated.length > 0) {
    logger.warn({ events: result.duplicated, target }, 'several webhooks point here: delete the extras in the portal');
  }
  logger.info({ created: result.created, present: result.present }, 'webhooks registered');
  return result;
}
