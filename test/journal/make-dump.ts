/**
 * `node --import tsx test/journal/make-dump.ts <file>`: makes the run's migrated PGlite dump at `file`
 * (make-templates.ts), for globalSetup, in a process of its own.
 */
import { makePgliteDump } from './make-templates.js';

const file = process.argv[2];
if (!file) throw new Error('usage: make-dump.ts <file>');
await makePgliteDump(file);
