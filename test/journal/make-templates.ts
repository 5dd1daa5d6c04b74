/**
 * Makes the migrated databases of a run (./templates.ts says what they are for): globalSetup's alone.
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { Kysely } from 'kysely';
import { PGliteDialect } from 'kysely-pglite-dialect';
import { openDatabase } from '../../src/journal/database.js';
import { migrate } from '../../src/journal/migrate.js';
import type { Schema } from '../../src/journal/schema.js';
import { admin, POSTGRES_URL } from './server-database.js';

const migrationsDir = fileURLToPath(new URL('../../src/journal/migrations/', import.meta.url));
const migrateSource = fileURLToPath(new URL('../../src/journal/migrate.ts', import.meta.url));

/** What the dump depends on: every migration's source, the migrator's, and PGlite's version. */
function dumpKey(): string {
  const hash = createHash('sha256');
  // Its package.json is not among the package's exports: read from where npm put it.
  hash.update(readFileSync(new URL('../../node_modules/@electric-sql/pglite/package.json', import.meta.url)));
  for (const file of [
    migrateSource,
    ...readdirSync(migrationsDir)
      .sort()
      .map((f) => path.join(migrationsDir, f)),
  ]) {
    hash.update(`${path.basename(file)}\n`).update(readFileSync(file));
  }
  return hash.digest('hex').slice(0, 16);
}

/** Where the dump of a migrated PGlite for the current migrations is kept (made by {@link makePgliteDump}). */
export function pgliteDumpPath(): string {
  return path.join(tmpdir(), `momo-pglite-${dumpKey()}.tar`);
}

/**
 * Makes the dump at `file` ({@link pgliteDumpPath}) if there is none. Written under another name then renamed,
 * so a run reading it never sees half a file.
 */
export async function makePgliteDump(file: string): Promise<void> {
  if (existsSync(file)) return;
  const lite = await PGlite.create('memory://');
  const db = new Kysely<Schema>({ dialect: new PGliteDialect(lite) });
  try {
    await migrate(db);
    // Uncompressed: larger on disk, but loaded faster than a gzipped one by every PGlite of the run.
    const dump = await lite.dumpDataDir('none');
    const partial = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
    await writeFile(partial, Buffer.from(await dump.arrayBuffer()));
    await rename(partial, file);
  } finally {
    await db.destroy();
  }
}

/**
 * {@link makePgliteDump} in a process of its own (./make-dump.ts): PGlite holds its process's event loop for
 * seconds at a time, and in vitest's own process (globalSetup) that held back every worker's first file.
 */
export function makePgliteDumpApart(file: string): Promise<void> {
  if (existsSync(file)) return Promise.resolve();
  const made = spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(new URL('./make-dump.ts', import.meta.url)), file],
    {
      cwd: fileURLToPath(new URL('../../', import.meta.url)),
      stdio: 'inherit',
    },
  );
  return new Promise((resolve, reject) => {
    made.once('error', reject);
    made.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`make-dump.ts failed (exit ${code})`))));
  });
}

/** A new template database's name: a run's own. */
export const pgTemplateName = (): string => `momo_template_${randomBytes(5).toString('hex')}`;

/** Makes the migrated template database `name` on the test server. */
export async function makePgTemplate(name: string): Promise<void> {
  await admin((c) => c.query(`create database "${name}"`));
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  // Closed before any copy: PostgreSQL copies a template only while nobody is connected to it.
  const database = await openDatabase({ databaseUrl: url.toString(), dataDir: 'memory://', poolSize: 1 });
  try {
    await migrate(database.db);
  } finally {
    await database.close();
  }
}

/** Drops the template database `name`, if it was made. */
export const dropPgTemplate = (name: string): Promise<void> =>
  admin((c) => c.query(`drop database if exists "${name}" with (force)`)).then(() => undefined);
