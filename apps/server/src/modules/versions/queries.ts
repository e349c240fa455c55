import { and, eq, inArray } from 'drizzle-orm';
import type { Database } from '../../db/client.js';
import { signRequests, versions } from '../../db/schema/index.js';

/**
 * What the version read model asks of the tables: a version's decrypt state (the versions table)
 * and a user's sign state of it (sign_requests). Read-only and across domains on purpose, as the
 * file sweep's and the metrics' queries are: it reports on the tables, it changes none.
 */

/** The stored file of a Done version; undefined when the version is not Done. */
export async function findDoneVersion(db: Database, appId: number, appVerId: number) {
  const [row] = await db
    .select({ country: versions.country, appId: versions.appId, fileKey: versions.fileKey })
    .from(versions)
    .where(and(eq(versions.appId, appId), eq(versions.appVerId, appVerId), eq(versions.status, 'Done')));
  return row?.fileKey ? { ...row, fileKey: row.fileKey } : undefined;
}

/** The statuses of a user's signs of these versions (rows that exist; the rest are No). */
export async function signsOfVersions(db: Database, userId: string, appVerIds: number[]) {
  if (appVerIds.length === 0) return [];
  return db
    .select({
      appId: signRequests.appId,
      appVerId: signRequests.appVerId,
      signType: signRequests.signType,
      status: signRequests.status,
      resigning: signRequests.resigning,
    })
    .from(signRequests)
    .where(
      and(
        eq(signRequests.userId, userId),
        eq(signRequests.source, 'version'),
        inArray(signRequests.appVerId, appVerIds),
      ),
    );
}
