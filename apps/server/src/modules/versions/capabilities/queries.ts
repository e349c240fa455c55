import { and, desc, eq, inArray } from 'drizzle-orm';
import type { SignedComponent } from '@sideport/ipa';
import type { Database } from '../../../db/client.js';
import { apps, versionComponents, versions } from '../../../db/schema/index.js';

/** Every query of the components read from Done versions (version_components). */

/** The components of these versions that were read; a version not read yet is absent. */
export async function componentsOf(
  db: Database,
  versions: ReadonlyArray<{ appId: number; appVerId: number }>,
) {
  if (versions.length === 0) return new Map<string, SignedComponent[]>();
  const rows = await db
    .select({
      appId: versionComponents.appId,
      appVerId: versionComponents.appVerId,
      components: versionComponents.components,
    })
    .from(versionComponents)
    .where(
      and(
        inArray(versionComponents.appId, [...new Set(versions.map((v) => v.appId))]),
        inArray(
          versionComponents.appVerId,
          versions.map((v) => v.appVerId),
        ),
      ),
    );
  return new Map(rows.map((r) => [`${r.appId}/${r.appVerId}`, r.components]));
}

/** Keeps what was read; a second read of the same version (another process) changes nothing. */
export async function saveComponents(
  db: Database,
  row: { appId: number; appVerId: number; components: SignedComponent[]; readAt: Date },
) {
  await db.insert(versionComponents).values(row).onConflictDoNothing();
}

/** The newest Done versions whose components were read, with their name in the store they came from. */
export async function doneWithComponents(db: Database, limit: number) {
  return db
    .select({
      appId: versions.appId,
      appVerId: versionComponents.appVerId,
      version: versions.version,
      name: apps.name,
      components: versionComponents.components,
    })
    .from(versionComponents)
    .innerJoin(
      versions,
      and(
        eq(versions.appId, versionComponents.appId),
        eq(versions.appVerId, versionComponents.appVerId),
        eq(versions.status, 'Done'),
      ),
    )
    .leftJoin(apps, and(eq(apps.appId, versions.appId), eq(apps.country, versions.country)))
    .orderBy(desc(versions.doneAt))
    .limit(limit);
}

/** The operator's setting of explicit App IDs for DUP copies (copy-app-ids.ts); undefined when never set. */
export { readSetting, writeSetting } from '../../../db/settings.js';
