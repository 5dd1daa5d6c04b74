/**
 * The setup file of the suite's files (vitest.config.ts), before each file's own hooks and tests: it waits
 * for what globalSetup makes beside the first files (dist/, the template databases: ready.ts), then, for a
 * file that starts the product as processes, takes the turn (turn.ts) and gives it back after the file;
 * after it, the databases its products ran on are dropped (journal/server-database.ts).
 */
import type { Socket } from 'node:net';
import { relative } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { dropProductDatabases } from './journal/server-database.js';
import { awaitReady } from './ready.js';
import { ROOT } from './product.js';
import { takesTurn, takeTurn } from './turn.js';

let turn: Socket | undefined;
// Bounded by the build and the databases, then by the other files' turns: the longest of them minutes.
// vitest gives the file as the second argument; the first (fixtures) must be a destructuring pattern.
// eslint-disable-next-line no-empty-pattern
beforeAll(async ({}, file) => {
  await awaitReady();
  if ('filepath' in file && takesTurn(relative(ROOT, file.filepath))) turn = await takeTurn();
}, 30 * 60_000);
afterAll(async () => {
  turn?.destroy();
  turn = undefined;
  await dropProductDatabases();
});
