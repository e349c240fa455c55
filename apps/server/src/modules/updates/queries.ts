import type { SignType } from '@sideport/contracts';
import { and, desc, eq, inArray, isNotNull, or, sql } from 'drizzle-orm';
import { queryRows, type Database } from '../../db/client.js';
import { deleteSetting, readSetting, writeSetting } from '../../db/settings.js';
import {
  apps,
  appUpdates,
  autoUpdateDays,
  autoUpdates,
  signingCertificates,
  signRequests,
  storeChecks,
  versions,
  type UpdateRunState,
} from '../../db/schema/index.js';
import { findSign } from '../sign/queries.js';

/**
 * The update tracking's queries. It writes its own tables only (store_checks, app_updates,
 * auto_updates, auto_update_days); what it needs of the artifacts and decrypt entries it reads,
 * as the versions read model does, and changes through the sign and decrypt services.
 */

export type RunRow = typeof appUpdates.$inferSelect;

/** A user's artifact of a version in a mode, with what an update needs to know of it. */
export interface InstalledRow {
  userId: string;
  appId: number;
  appVerId: number;
  signType: SignType;
  version: string | null;
  country: string;
  bundleId: string | null;
  certFingerprint: string | null;
  udids: string[] | null;
  signedAt: Date | null;
  name: string | null;
  iconUrl: string | null;
  storeVersion: string | null;
}

/** Every app someone holds an artifact of gets its row, checked from then on. */
export async function trackInstalledApps(db: Database) {
  await db.execute(sql`
    insert into ${storeChecks} (country, app_id)
    select distinct v.country, s.app_id
    from ${signRequests} s join ${versions} v on v.app_id = s.app_id and v.app_ver_id = s.app_ver_id
    where s.source = 'version' and s.file_key is not null
    on conflict do nothing`);
}

/**
 * Claims up to `limit` apps not checked since `before` (never checked first), marking them
 * checked now: a process running the same pass at once skips them, so each app is asked once.
 */
export async function claimDue(db: Database, now: Date, before: Date, limit: number) {
  const rows = await queryRows<{ country: string; app_id: string | number; version: string | null }>(
    db,
    sql`
      update ${storeChecks} c set checked_at = ${now}
      from (
        select country, app_id from ${storeChecks}
        where checked_at is null or checked_at < ${before}
        order by checked_at nulls first, country, app_id
        limit ${limit}
        for update skip locked
      ) due
      where c.country = due.country and c.app_id = due.app_id
      returning c.country, c.app_id, c.version`,
  );
  return rows.map((r) => ({ country: r.country, appId: Number(r.app_id), version: r.version }));
}

/** Gives claimed apps back unchecked (the store refused the pass): the next pass asks for them first. */
export async function releaseClaims(db: Database, country: string, appIds: number[]) {
  if (appIds.length === 0) return;
  await db
    .update(storeChecks)
    .set({ checkedAt: null })
    .where(and(eq(storeChecks.country, country), inArray(storeChecks.appId, appIds)));
}

/** Records the store's versions; returns the apps whose version changed since the last check. */
export async function recordVersions(
  db: Database,
  country: string,
  found: Array<{ appId: number; version: string }>,
  now: Date,
): Promise<number[]> {
  if (found.length === 0) return [];
  const ids = found.map((f) => f.appId);
  const strings = found.map((f) => f.version);
  const rows = await queryRows<{ app_id: string | number; changed: boolean }>(
    db,
    sql`
      update ${storeChecks} c
      set version = f.version,
          changed_at = case when c.version is distinct from f.version then ${now}::timestamptz else c.changed_at end
      from (select unnest(${sql.param(ids)}::bigint[]) as app_id, unnest(${sql.param(strings)}::text[]) as version) f
      where c.country = ${country} and c.app_id = f.app_id
      returning c.app_id, (c.changed_at = ${now}::timestamptz) as changed`,
  );
  return rows.filter((r) => r.changed).map((r) => Number(r.app_id));
}

/** Artifacts of versions (not Feather) with their version, country, store record and the store's version. */
export async function installed(db: Database, where: { userId?: string; appIds?: number[] }) {
  const conditions = [eq(signRequests.source, 'version'), isNotNull(signRequests.fileKey)];
  if (where.userId !== undefined) conditions.push(eq(signRequests.userId, where.userId));
  if (where.appIds !== undefined) {
    if (where.appIds.length === 0) return [];
    conditions.push(inArray(signRequests.appId, where.appIds));
  }
  const rows = await db
    .select({
      userId: signRequests.userId,
      appId: signRequests.appId,
      appVerId: signRequests.appVerId,
      signType: signRequests.signType,
      version: versions.version,
      country: versions.country,
      bundleId: signRequests.bundleId,
      certFingerprint: signRequests.certFingerprint,
      udids: signRequests.udids,
      signedAt: signRequests.signedAt,
      name: apps.name,
      iconUrl: apps.iconUrl,
      storeVersion: storeChecks.version,
    })
    .from(signRequests)
    .innerJoin(
      versions,
      and(eq(versions.appId, signRequests.appId), eq(versions.appVerId, signRequests.appVerId)),
    )
    .leftJoin(apps, and(eq(apps.country, versions.country), eq(apps.appId, signRequests.appId)))
    .leftJoin(
      storeChecks,
      and(eq(storeChecks.country, versions.country), eq(storeChecks.appId, signRequests.appId)),
    )
    .where(and(...conditions));
  return rows as InstalledRow[];
}

export async function runsOf(db: Database, where: { userId?: string; appIds?: number[] }) {
  const conditions = [];
  if (where.userId !== undefined) conditions.push(eq(appUpdates.userId, where.userId));
  if (where.appIds !== undefined) {
    if (where.appIds.length === 0) return [];
    conditions.push(inArray(appUpdates.appId, where.appIds));
  }
  return db
    .select()
    .from(appUpdates)
    .where(and(...conditions));
}

export async function findRun(db: Database, userId: string, appId: number, signType: SignType) {
  const [row] = await db
    .select()
    .from(appUpdates)
    .where(
      and(eq(appUpdates.userId, userId), eq(appUpdates.appId, appId), eq(appUpdates.signType, signType)),
    );
  return row;
}

/** Starts (or starts again) the user's update of the app in the mode: the row replaces any before. */
export async function startRun(db: Database, row: Omit<typeof appUpdates.$inferInsert, 'id'>) {
  const { userId, appId, signType, ...rest } = row;
  void userId;
  void appId;
  void signType;
  const [saved] = await db
    .insert(appUpdates)
    .values(row)
    .onConflictDoUpdate({ target: [appUpdates.userId, appUpdates.appId, appUpdates.signType], set: rest })
    .returning();
  return saved!;
}

/** Moves a run on from `from`, only if it is still there (another process may have moved it first). */
export async function moveRun(
  db: Database,
  id: number,
  from: UpdateRunState,
  set: Partial<typeof appUpdates.$inferInsert>,
): Promise<RunRow | undefined> {
  const [row] = await db
    .update(appUpdates)
    .set(set)
    .where(and(eq(appUpdates.id, id), eq(appUpdates.state, from)))
    .returning();
  return row;
}

/** Runs waiting on a decryption or a sign, oldest first. */
export async function openRuns(db: Database, limit: number) {
  return db
    .select()
    .from(appUpdates)
    .where(or(eq(appUpdates.state, 'Decrypting'), eq(appUpdates.state, 'Signing')))
    .orderBy(appUpdates.updatedAt)
    .limit(limit);
}

/** The decrypt entry of an app's version string: Done first, then one being worked, then a refusal. */
export async function entryOfVersion(db: Database, appId: number, version: string) {
  const rows = await db
    .select({
      status: versions.status,
      appVerId: versions.appVerId,
      reason: versions.reason,
      country: versions.country,
    })
    .from(versions)
    .where(and(eq(versions.appId, appId), eq(versions.version, version)))
    .orderBy(
      desc(sql`${versions.status} = 'Done'`),
      desc(sql`${versions.status} <> 'Not'`),
      desc(versions.seq),
    );
  return rows[0];
}

/** A user's sign of a version in a mode, as the update follows it. */
export function signOf(db: Database, userId: string, appId: number, appVerId: number, signType: SignType) {
  return findSign(db, { userId, source: 'version', appId, appVerId, signType });
}

/** The certificates of these fingerprints (their team is the subject's OU). */
export async function certificatesOf(db: Database, fingerprints: string[]) {
  if (fingerprints.length === 0) return [];
  return db
    .select({ fingerprint: signingCertificates.fingerprint, certPem: signingCertificates.certPem })
    .from(signingCertificates)
    .where(inArray(signingCertificates.fingerprint, fingerprints));
}

export async function autoOf(db: Database, userId: string) {
  const rows = await db
    .select({ appId: autoUpdates.appId })
    .from(autoUpdates)
    .where(eq(autoUpdates.userId, userId));
  return rows.map((r) => r.appId);
}

export async function setAuto(db: Database, userId: string, appId: number, enabled: boolean, now: Date) {
  if (enabled) {
    await db.insert(autoUpdates).values({ userId, appId, createdAt: now }).onConflictDoNothing();
  } else {
    await db.delete(autoUpdates).where(and(eq(autoUpdates.userId, userId), eq(autoUpdates.appId, appId)));
  }
}

/** Every user's automatic-update choices for these apps (app 0: all). */
export async function autoFor(db: Database, appIds: number[]) {
  return db
    .select({ userId: autoUpdates.userId, appId: autoUpdates.appId })
    .from(autoUpdates)
    .where(inArray(autoUpdates.appId, [0, ...appIds]));
}

/** Takes one of today's automatic updates if the cap leaves one; false when the cap is reached. */
export async function takeAutoSlot(db: Database, day: string, cap: number): Promise<boolean> {
  // A cap of 0 takes nothing, and counts nothing as started.
  if (cap <= 0) return false;
  const rows = await queryRows<{ started: number }>(
    db,
    sql`
      insert into ${autoUpdateDays} (day, started) values (${day}, 1)
      on conflict (day) do update set started = ${autoUpdateDays}.started + 1
      where ${autoUpdateDays}.started < ${cap}
      returning started`,
  );
  return rows.length > 0;
}

/** The settings row of the daily cap of automatic updates the operator set in the admin console. */
const AUTO_CAP_KEY = 'auto_update_daily_cap';

/** The cap the operator set, or undefined when they set none (AUTO_UPDATE_DAILY_CAP applies). */
export async function operatorCap(db: Database): Promise<number | undefined> {
  const value = await readSetting(db, AUTO_CAP_KEY);
  const cap = value === undefined ? Number.NaN : Number(value);
  return Number.isInteger(cap) && cap >= 0 ? cap : undefined;
}

/** Sets the operator's cap, or removes it (null). */
export async function setOperatorCap(db: Database, cap: number | null) {
  if (cap === null) await deleteSetting(db, AUTO_CAP_KEY);
  else await writeSetting(db, AUTO_CAP_KEY, String(cap));
}

export async function autoStarted(db: Database, day: string) {
  const [row] = await db.select().from(autoUpdateDays).where(eq(autoUpdateDays.day, day));
  return row?.started ?? 0;
}

export async function trackedSummary(db: Database) {
  const [row] = await queryRows<{ tracked: number; last: Date | string | null }>(
    db,
    sql`select count(*)::int as tracked, max(checked_at) as last from ${storeChecks}`,
  );
  return { tracked: row?.tracked ?? 0, lastCheckedAt: row?.last == null ? null : new Date(row.last) };
}

export async function countRunning(db: Database) {
  const [row] = await queryRows<{ n: number }>(
    db,
    sql`select count(*)::int as n from ${appUpdates} where state in ('Decrypting', 'Signing')`,
  );
  return row?.n ?? 0;
}

/** Installed apps with a store version on record: the operator's count of waiting updates reads them. */
export async function installedWithStoreVersion(db: Database) {
  const rows = await installed(db, {});
  return rows.filter((r) => r.storeVersion !== null);
}
