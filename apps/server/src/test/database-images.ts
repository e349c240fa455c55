import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type pg from 'pg';
import { migrationsFolder, openDatabase } from '../db/client.js';

/**
 * Migrated, empty databases to copy, so a test's fresh database costs a copy rather than an initdb
 * and every migration: in-memory PGlite starts from a dumped data folder (about a second instead of
 * two or three), PostgreSQL from a template database. Both are named by a digest of the migrations
 * (and PGlite's version), so a changed migration makes a new one; the test still runs `migrate()`
 * on its copy, which finds nothing left to apply.
 */
const imageKey = (() => {
  let key: string | undefined;
  return () => {
    if (key) return key;
    const hash = createHash('sha256');
    // PGlite's own build: its package.json sits above the entry point (the package exports no path to it).
    const pgliteEntry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
    hash.update(readFileSync(path.join(pgliteEntry, '../../package.json')));
    for (const file of readdirSync(migrationsFolder, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => path.join(entry.parentPath, entry.name))
      .sort()) {
      hash.update(path.relative(migrationsFolder, file)).update(readFileSync(file));
    }
    key = hash.digest('hex').slice(0, 16);
    return key;
  };
})();

let pgliteImage: Promise<Blob> | undefined;

/** The migrated PGlite data folder as a tarball: read from the temp folder, or made and kept there. */
export function migratedPgliteImage(): Promise<Blob> {
  pgliteImage ??= (async () => {
    const file = path.join(tmpdir(), `sideport-test-pglite-${imageKey()}.tar.gz`);
    try {
      return new Blob([readFileSync(file)]);
    } catch {
      // Not made yet on this machine: make it below.
    }
    const handle = await openDatabase({ pgliteDir: null });
    await handle.migrate();
    const image = await handle.dumpDataDir!();
    await handle.close();
    // Another test file may be making it at the same time: each writes its own and renames.
    const partial = `${file}.${process.pid}`;
    writeFileSync(partial, Buffer.from(await image.arrayBuffer()));
    renameSync(partial, file);
    return image;
  })();
  return pgliteImage;
}

/**
 * The name of a migrated template database on `adminUrl`'s server, made on first use. A session
 * lock lets one test file make it while the others wait; a template left half migrated by a killed
 * run is finished by each copy's own `migrate()`.
 */
export async function migratedPostgresTemplate(admin: pg.Client, adminUrl: string): Promise<string> {
  const name = `sideport_template_${imageKey()}`;
  await admin.query('select pg_advisory_lock(hashtext($1))', [name]);
  try {
    const { rowCount } = await admin.query('select 1 from pg_database where datname = $1', [name]);
    if (!rowCount) {
      await admin.query(`create database ${name}`);
      const url = new URL(adminUrl);
      url.pathname = `/${name}`;
      const handle = await openDatabase({ url: url.toString() });
      await handle.migrate();
      await handle.close();
    }
  } finally {
    await admin.query('select pg_advisory_unlock(hashtext($1))', [name]);
  }
  return name;
}
