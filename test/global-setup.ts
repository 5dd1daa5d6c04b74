/**
 * vitest's globalSetup, once per run before any test file:
 *
 * - the turn of the files that start the product as processes is served (turn.ts): one of them at a time;
 * - dist/ is built if it is stale, so that every test that starts the product as a process runs the compiled
 *   JavaScript (test/product.ts), and beside the build the migrated databases every test database starts
 *   from are made (test/journal/templates.ts). Neither is waited for here: the unit files, which need neither,
 *   start at once, and the other files wait for both (ready.ts).
 *
 * They are named to the workers in their environment. At the end the template database is dropped.
 */
import { DUMP_SETTING, TEMPLATE_SETTING } from './journal/templates.js';
import {
  dropPgTemplate,
  makePgliteDumpApart,
  makePgTemplate,
  pgliteDumpPath,
  pgTemplateName,
} from './journal/make-templates.js';
import { buildProductAsync } from './product.js';
import { READY_SETTING, serveReady } from './ready.js';
import { serveTurns, TURN_SETTING } from './turn.js';

export default async function setup(): Promise<() => Promise<void>> {
  const template = pgTemplateName();
  const dump = pgliteDumpPath();
  process.env[TEMPLATE_SETTING] = template;
  process.env[DUMP_SETTING] = dump;
  const work = Promise.all([buildProductAsync(), makePgTemplate(template), makePgliteDumpApart(dump)]);
  const settled = work.then(
    () => undefined,
    () => undefined,
  );
  const turns = await serveTurns();
  process.env[TURN_SETTING] = turns.path;
  const ready = await serveReady(work);
  process.env[READY_SETTING] = ready.path;
  return async () => {
    await ready.close();
    await turns.close();
    await settled;
    await dropPgTemplate(template);
  };
}
