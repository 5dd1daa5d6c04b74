/**
 * vitest's globalSetup, once per run before any test file:
 *
 * - dist/ is built if it is stale, so that every test that starts the product as a process runs the compiled
 *   JavaScript (test/product.ts);
 * - beside the build, the migrated databases every test database starts from are made
 *   (test/journal/templates.ts);
 * - the `processes` project's turn is served (turn.ts): one of its files at a time.
 *
 * They are named to the workers in their environment. At the end the template database is dropped.
 */
import { DUMP_SETTING, TEMPLATE_SETTING } from './journal/templates.js';
import { makePgliteDump, makePgTemplate } from './journal/make-templates.js';
import { POSTGRES_URL } from './journal/server-database.js';
import { buildProductAsync } from './product.js';
import { serveTurns, TURN_SETTING } from './turn.js';

export default async function setup(): Promise<() => Promise<void>> {
  const building = buildProductAsync();
  const template = makePgTemplate(POSTGRES_URL);
  const turns = await serveTurns();
  process.env[TURN_SETTING] = turns.path;
  const teardown = async () => {
    await turns.close();
    await (await template.catch(() => undefined))?.drop();
  };
  try {
    // One after the other: PGlite holds this process's event loop for seconds at a time, which would run out
    // the template's migration queries' client-side timeouts.
    process.env[TEMPLATE_SETTING] = (await template).name;
    process.env[DUMP_SETTING] = await makePgliteDump();
    await building;
  } catch (error) {
    await building.catch(() => {});
    await teardown();
    throw error;
  }
  return teardown;
}
