/**
 * A setup file of the suite and `processes` projects (vitest.config.ts): its file waits, before its own hooks
 * and tests, for what globalSetup makes beside the first files (dist/, the template databases: ready.ts).
 */
import { beforeAll } from 'vitest';
import { awaitReady } from './ready.js';

// Bounded by the build and the databases: a minute and more on a loaded machine.
beforeAll(awaitReady, 5 * 60_000);
