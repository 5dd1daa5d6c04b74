/**
 * Makes the migrated databases of a run (./templates.ts says what they are for): globalSetup's alone.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { Kysely } from 'kysely';
import { PGliteDialect } from 'kysely-pglite-dialect';
import pg from 'pg';
import { openDatabase } from '../../src/journal/database.js';
import { migrate } from '../../src/journal/migrate.js';
import type { Schema } from '../../src/journal/schema.js';

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

/**
 * The path of a dump of a migrated PGlite for the current migrations, made if there is none. Written under
 * another name then renamed, so a run reading it never sees half a file.
 */
export async function makePgliteDump(): Promise<string> {
  const file = path.join(tmpdir(), `momo-pglite-${dumpKey()}.tar`);
  if (existsSync(file)) return file;
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
  return file;
}

/** A migrated template database on the server at `adminUrl`, and how to drop it. */
export async function makePgTemplate(adminUrl: string): Promise<{ name: string; drop(): Promise<void> }> {
  const name = `momo_template_${randomBytes(5).toString('hex')}`;
  const admin = async (query: string) => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try {
      await client.query(query);
    } finally {
      await client.end();
    }
  };
  await admin(`create database "${name}"`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  // Closed before any copy: PostgreSQL copies a template only while nobody is connected to it.
  const database = await openDatabase({ databaseUrl: url.toString(), dataDir: 'memory://', poolSize: 1 });
  try {
    await migrate(database.db);
  } finally {
    await database.close();
  }
  return { name, drop: () => admin(`drop database if exists "${name}" with (force)`) };
}
