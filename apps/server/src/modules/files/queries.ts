import { inArray, isNotNull, and, sql } from 'drizzle-orm';
import { queryRows, type Database } from '../../db/client.js';
import { signRequests, versions } from '../../db/schema/index.js';

/**
 * What the file sweep asks of the tables: which stored keys a row names. Read-only and across
 * domains on purpose, as the metrics' queries are: it reports on the tables, it changes none.
 */

/** Of `keys`, those a row names: a version's IPA, a sign's source, a sign's artifact. */
export async function namedKeys(db: Database, keys: string[]): Promise<Set<string>> {
  if (keys.length === 0) return new Set();
  const [decrypted, sources, signed] = await Promise.all([
    db.select({ key: versions.fileKey }).from(versions).where(inArray(versions.fileKey, keys)),
    db
      .select({ key: signRequests.sourceKey })
      .from(signRequests)
      .where(inArray(signRequests.sourceKey, keys)),
    db.select({ key: signRequests.fileKey }).from(signRequests).where(inArray(signRequests.fileKey, keys)),
  ]);
  return new Set([...decrypted, ...sources, ...signed].map((row) => row.key!));
}

/** Of the apps `appIds`, every version a row keeps (`{appId}-{appVerId}`), whatever its status. */
export async function knownVersions(db: Database, appIds: number[]): Promise<Set<string>> {
  if (appIds.length === 0) return new Set();
  const rows = await db
    .select({ appId: versions.appId, appVerId: versions.appVerId })
    .from(versions)
    .where(and(inArray(versions.appId, appIds), isNotNull(versions.appVerId)));
  return new Set(rows.map((row) => `${row.appId}-${row.appVerId}`));
}

// pg_try_advisory_xact_lock key: one process at a time sweeps the shared store.
const SWEEP_LOCK_KEY = 0x5346_5357; // 'SFSW'

/**
 * Runs `work` while this process holds the sweep lock, or not at all (undefined) when another
 * process holds it. The lock belongs to a transaction that stays open while `work` runs on other
 * connections, so a process that dies mid-sweep lets go of it with its connection. PostgreSQL
 * only: PGlite serves one process, and its single connection would wait on the open transaction.
 */
export async function whileSweepLocked<T>(db: Database, work: () => Promise<T>): Promise<T | undefined> {
  return db.transaction(async (tx) => {
    const [row] = await queryRows<{ locked: boolean }>(
      tx,
      sql`select pg_try_advisory_xact_lock(${SWEEP_LOCK_KEY}) as locked`,
    );
    return row?.locked ? work() : undefined;
  });
}
