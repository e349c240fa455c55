import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { eq, sql } from 'drizzle-orm';
import pg from 'pg';
import type { DestinationStream } from 'pino';
import { buildApp } from '../app.js';
import { openDatabase, type DatabaseHandle } from '../db/client.js';
import { payments } from '../db/schema/index.js';
import { loadConfig } from '../platform/config.js';
import { migratedPgliteImage, migratedPostgresTemplate } from './database-images.js';

export type DatabaseKind = 'pglite' | 'postgres';

/**
 * Which databases a suite runs on. PGlite always, and PostgreSQL too when TEST_DATABASE_URL is set
 * (CI sets it): `describe.each(databaseKinds)`. That is the rule for anything that touches what SQL
 * does: queues and leases, concurrency, migrations, recovery, transactions, locking, LISTEN/NOTIFY,
 * restarts, and every module's own routes and queries.
 */
export const databaseKinds: DatabaseKind[] = process.env.TEST_DATABASE_URL
  ? ['pglite', 'postgres']
  : ['pglite'];

/**
 * The one database of a suite whose behaviour does not depend on the database underneath:
 * `describe.each([oneDatabase])`. PostgreSQL when TEST_DATABASE_URL is set (production's database,
 * and the faster of the two in the tests), else PGlite. Every query such a suite's routes and
 * commands make runs on both databases in its module's own suite. The suites that run once:
 *
 * - the HTTP surface, whose answers are decided before or beside any query: `route-access.test.ts`
 *   (who may call a route), `cross-site.test.ts` (cross-site requests), `platform/public-origin.test.ts`
 *   (links made from the request), and in `fuzz.test.ts` requests naming no host and bodies that
 *   stop arriving;
 * - `fuzz.test.ts`, bad input for every route: it checks input validation (a 4xx sentence, nothing
 *   changed), which answers before a query;
 * - `operator-cli.test.ts`, the operator commands as child processes: their arguments, answers and
 *   exit codes, through the same services the API uses. Its last suites (every command's refusals,
 *   `migrate`, `agent:create`) run on embedded PGlite whatever this says, as `npx sideport` does by
 *   default.
 */
export const oneDatabase: DatabaseKind = process.env.TEST_DATABASE_URL ? 'postgres' : 'pglite';

export interface TestDatabase extends DatabaseHandle {
  /** PostgreSQL: the URL of this test's own database (another API process can open it too). */
  url?: string;
  dispose(): Promise<void>;
}

/** A fresh, migrated database: in-memory PGlite, or a new PostgreSQL database dropped afterwards. */
export async function openTestDatabase(kind: DatabaseKind): Promise<TestDatabase> {
  if (kind === 'pglite') {
    const handle = await openDatabase({ pgliteDir: null, image: await migratedPgliteImage() });
    await handle.migrate();
    return { ...handle, dispose: () => handle.close() };
  }
  const created = await createPostgresDatabase({ migrated: true });
  const handle = await openDatabase({ url: created.url });
  await handle.migrate();
  return {
    ...handle,
    url: created.url,
    async dispose() {
      await handle.close();
      await created.drop();
    },
  };
}

/**
 * A new PostgreSQL database on TEST_DATABASE_URL's server: empty, for tests that open it themselves,
 * or a copy of the migrated template (`migrated`).
 */
export async function createPostgresDatabase(
  options: { migrated?: boolean } = {},
): Promise<{ url: string; drop(): Promise<void> }> {
  const adminUrl = process.env.TEST_DATABASE_URL;
  if (!adminUrl) throw new Error('TEST_DATABASE_URL is not set');
  const name = `sideport_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const template = options.migrated ? await migratedPostgresTemplate(admin, adminUrl) : undefined;
    await admin.query(`create database ${name}${template ? ` template ${template}` : ''}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const cleanup = new pg.Client({ connectionString: adminUrl });
      await cleanup.connect();
      await cleanup.query(`drop database if exists ${name} with (force)`);
      await cleanup.end();
    },
  };
}

export interface TestApp extends Awaited<ReturnType<typeof buildApp>> {
  database: TestDatabase;
  dataDir: string;
  close(): Promise<void>;
}

/** The real server (fastify inject) on a fresh database, with env overrides and an optional clock. */
export async function createTestApp(
  kind: DatabaseKind,
  options: {
    env?: Record<string, string>;
    clock?: () => Date;
    web?: boolean;
    logStream?: DestinationStream;
  } = {},
): Promise<TestApp> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'sideport-test-'));
  // `web`: a small built web app in DATA_DIR/web, so the SPA and static routes are registered.
  const webDir = path.join(dataDir, 'web');
  if (options.web) {
    mkdirSync(path.join(webDir, 'assets'), { recursive: true });
    writeFileSync(
      path.join(webDir, 'index.html'),
      '<!doctype html><title>Sideport</title><div id="root"></div>',
    );
    writeFileSync(path.join(webDir, 'assets', 'app-1234.js'), 'console.log(1)');
  }
  const config = loadConfig({
    LOG_LEVEL: 'silent',
    DATA_DIR: dataDir,
    WEB_DIST_DIR: options.web ? webDir : dataDir,
    ...options.env,
  });
  const database = await openTestDatabase(kind);
  const built = await buildApp({
    config,
    database,
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.logStream ? { logStream: options.logStream } : {}),
  });
  await built.app.ready();
  return {
    ...built,
    database,
    dataDir,
    async close() {
      await built.app.close();
      await database.dispose();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * The header the web app's API client sends on every call (apps/web/src/lib/api.ts): with a
 * session cookie and neither Sec-Fetch-Site nor Origin, a call that changes state needs it
 * (docs/security.md, Cross-site requests). Tests that call as the web app send it with the cookie.
 */
export const WEB_CLIENT = { 'x-sideport-client': 'web' } as const;

/** The cookie header that carries the session set by a sign-in or sign-up answer. */
export function sessionCookie(response: { cookies: Array<{ name: string; value: string }> }) {
  const cookie = response.cookies.find((c) => c.name === 'sideport_session');
  if (!cookie) throw new Error('the answer set no session cookie');
  return `sideport_session=${cookie.value}`;
}

export { fixturesDir } from './fixtures.js';

/** Signs up a user through the API and returns its cookie header; grade > 0 is set through the service. */
export async function signedInUser(t: Pick<TestApp, 'app' | 'services'>, id: string, grade = 0) {
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/sign-up',
    payload: { id, pw: 'a'.repeat(32) },
  });
  if (res.statusCode !== 200) throw new Error(`sign-up failed: ${res.statusCode} ${res.body}`);
  if (grade !== 0) await t.services.auth.setGrade(id, grade);
  return sessionCookie(res);
}

/** How many payments the database records for a user (what billing tests assert exactly-once on). */
export async function countPayments(t: TestApp, userId: string): Promise<number> {
  const [row] = await t.database.db
    .select({ n: sql<number>`count(*)::int` })
    .from(payments)
    .where(eq(payments.userId, userId));
  return row!.n;
}
