import { and, asc, desc, eq, inArray, isNull, lte, sql, type SQL } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import { PAGE_SIZE } from '@sideport/contracts';
import { queryRows, type Database } from '../../db/client.js';
import { apps, blacklist, searchCache, versionDoneSeq, versions } from '../../db/schema/index.js';
import type { StoreApp } from './itunes.js';

export const ACTIVE_STATUSES = ['Pending', 'Downloading', 'Downloaded', 'Process'] as const;

export type AppRow = typeof apps.$inferSelect;
export type VersionRow = typeof versions.$inferSelect;
export interface ListRow {
  app: AppRow;
  entry: Pick<
    VersionRow,
    'seq' | 'appVerId' | 'version' | 'status' | 'premium' | 'minimumOs' | 'sizeBytes' | 'doneAt'
  > & {
    doneSeq: number | null;
  };
}

const entryColumns = {
  seq: versions.seq,
  appVerId: versions.appVerId,
  version: versions.version,
  status: versions.status,
  premium: versions.premium,
  doneSeq: versions.doneSeq,
  minimumOs: versions.minimumOs,
  sizeBytes: versions.sizeBytes,
  doneAt: versions.doneAt,
};

/**
 * Writes the store's records of apps. The store may list one app twice in an answer, and one
 * INSERT ... ON CONFLICT DO UPDATE cannot touch a row twice: the first record of each app is kept.
 */
export async function upsertApps(db: Database, country: string, list: StoreApp[], fetchedAt: Date) {
  if (list.length === 0) return;
  // One row per app: the store may list an app twice in one answer, and one INSERT ... ON
  // CONFLICT cannot update the same row twice.
  const unique = [...new Map(list.map((a) => [a.appId, a])).values()];
  const rows = unique.map((a) => ({ ...a, country, fetchedAt }));
  await db
    .insert(apps)
    .values(rows)
    .onConflictDoUpdate({
      target: [apps.country, apps.appId],
      set: Object.fromEntries(
        Object.keys(rows[0]!)
          .filter((k) => k !== 'country' && k !== 'appId')
          .map((k) => [k, sql.raw(`excluded.${apps[k as keyof StoreApp & keyof typeof apps].name}`)]),
      ),
    });
}

export async function findCachedSearch(db: Database, country: string, term: string) {
  const [row] = await db
    .select()
    .from(searchCache)
    .where(and(eq(searchCache.country, country), eq(searchCache.term, term)))
    .limit(1);
  return row;
}

export async function saveSearch(
  db: Database,
  country: string,
  term: string,
  appIds: number[],
  fetchedAt: Date,
) {
  await db
    .insert(searchCache)
    .values({ country, term, appIds, fetchedAt })
    .onConflictDoUpdate({ target: [searchCache.country, searchCache.term], set: { appIds, fetchedAt } });
}

export async function findApp(db: Database, country: string, appId: number) {
  const [row] = await db
    .select()
    .from(apps)
    .where(and(eq(apps.country, country), eq(apps.appId, appId)))
    .limit(1);
  return row;
}

type PageOrder = 'latest' | 'queue';

/**
 * One page of entries joined to their apps. The page is cut from `versions` alone first (an index
 * scan of 24 rows), then joined: joining first lets the planner hash-join a million rows. With
 * `country`, an entry shows that country's store record of its app where the catalogue has one
 * (the country it was requested in otherwise).
 */
async function pageWithApps(
  db: Database,
  where: SQL,
  order: PageOrder,
  page: number,
  country?: string,
): Promise<ListRow[]> {
  const byOrder = (c: {
    doneSeq: typeof versions.doneSeq;
    premium: typeof versions.premium;
    seq: typeof versions.seq;
  }) => (order === 'latest' ? [desc(c.doneSeq)] : [desc(c.premium), asc(c.seq)]);
  const cut = db
    .select({ ...entryColumns, country: versions.country, appId: versions.appId })
    .from(versions)
    .where(where)
    .orderBy(...byOrder(versions))
    .limit(PAGE_SIZE)
    .offset(page * PAGE_SIZE)
    .as('cut');
  const listed = alias(apps, 'listed');
  const rows = await db
    .select({
      app: apps,
      listed,
      entry: {
        seq: cut.seq,
        appVerId: cut.appVerId,
        version: cut.version,
        status: cut.status,
        premium: cut.premium,
        doneSeq: cut.doneSeq,
        minimumOs: cut.minimumOs,
        sizeBytes: cut.sizeBytes,
        doneAt: cut.doneAt,
      },
    })
    .from(cut)
    .innerJoin(apps, and(eq(apps.country, cut.country), eq(apps.appId, cut.appId)))
    .leftJoin(listed, and(eq(listed.country, country ?? sql`null`), eq(listed.appId, cut.appId)))
    // A join does not keep the subquery's order; sorting the 24 joined rows again costs nothing.
    .orderBy(...byOrder(cut as unknown as Parameters<typeof byOrder>[0]));
  return rows.map(({ app, listed: own, entry }) => ({ app: own ?? app, entry }));
}

/**
 * Done versions, newest first. `anchor` (a done_seq) keeps later pages stable while entries are
 * added; `country` shows each with that country's store record of its app where there is one.
 */
export async function listLatest(
  db: Database,
  page: number,
  anchor: number,
  country?: string,
): Promise<ListRow[]> {
  return pageWithApps(
    db,
    and(eq(versions.status, 'Done'), lte(versions.doneSeq, anchor))!,
    'latest',
    page,
    country,
  );
}

/** Waiting and working entries: premium first, then oldest. `anchor` is the newest seq seen. */
export async function listQueue(db: Database, page: number, anchor: number): Promise<ListRow[]> {
  return pageWithApps(
    db,
    and(inArray(versions.status, [...ACTIVE_STATUSES]), lte(versions.seq, anchor))!,
    'queue',
    page,
  );
}

/**
 * The place (1 first) of each of these Pending entries among all Pending ones in the order agents
 * take them: premium first, then oldest. Counted now, not from the list's anchor: entries added
 * since, a premium one say, come before.
 */
export async function queuePositions(db: Database, seqs: number[]): Promise<Map<number, number>> {
  if (seqs.length === 0) return new Map();
  const rows = await queryRows<{ seq: string; position: string }>(
    db,
    sql`
    select seq, position from (
      select ${versions.seq} as seq, row_number() over (order by ${versions.premium} desc, ${versions.seq}) as position
      from ${versions} where ${versions.status} = 'Pending'
    ) ranked
    where seq in (${sql.join(
      seqs.map((seq) => sql`${seq}`),
      sql`, `,
    )})
  `,
  );
  return new Map(rows.map((r) => [Number(r.seq), Number(r.position)]));
}

/** Entries waiting for an agent. */
export async function countPending(db: Database): Promise<number> {
  const [row] = await db
    .select({ n: sql<string>`count(*)` })
    .from(versions)
    .where(eq(versions.status, 'Pending'));
  return Number(row?.n ?? 0);
}

interface StatusRow {
  app_id: string;
  status: string | null;
  app_ver_id: string | null;
  premium: boolean | null;
  reason: string | null;
  requested_by: string | null;
  blacklisted: boolean;
}

/**
 * The apps of a search, each with the decrypt entry that decides its status: an active entry
 * first, then a Done entry of the store's current version, then the newest entry. The entries are
 * those the country's listing shows: its own app-level requests and every known store version,
 * whichever country asked for it (docs/architecture.md, Data).
 */
export async function appsWithStatus(db: Database, country: string, appIds: number[]) {
  if (appIds.length === 0) return [];
  const rows = await queryRows<StatusRow>(
    db,
    sql`
    select a.app_id, s.status, s.app_ver_id, s.premium, s.reason, s.requested_by,
      exists (select 1 from ${blacklist} b where b.app_id = a.app_id) as blacklisted
    from ${apps} a
    left join lateral (
      select v.status, v.app_ver_id, v.premium, v.reason, v.requested_by from ${versions} v
      where v.app_id = a.app_id and (v.app_ver_id is not null or v.country = a.country)
      order by (v.status in ('Pending', 'Downloading', 'Downloaded', 'Process')) desc,
               (v.status = 'Done' and v.version = a.version) desc,
               v.seq desc
      limit 1
    ) s on true
    where a.country = ${country} and a.app_id in (${sql.join(
      appIds.map((id) => sql`${id}`),
      sql`, `,
    )})
  `,
  );
  const statusById = new Map(rows.map((r) => [Number(r.app_id), r]));
  const appRows = await db
    .select()
    .from(apps)
    .where(and(eq(apps.country, country), inArray(apps.appId, appIds)));
  const byId = new Map(appRows.map((a) => [a.appId, a]));
  return appIds.flatMap((id) => {
    const app = byId.get(id);
    const s = statusById.get(id);
    return app
      ? [
          {
            app,
            status: s?.status ?? null,
            appVerId: s?.app_ver_id ?? null,
            premium: s?.premium ?? false,
            reason: s?.reason ?? null,
            requestedBy: s?.requested_by ?? null,
            blacklisted: s?.blacklisted ?? false,
          },
        ]
      : [];
  });
}

/** Test and agent support: a decrypt entry in a given state (Done ones get their done_seq). */
export async function insertVersion(
  db: Database,
  v: {
    country: string;
    appId: number;
    appVerId: number | null;
    version: string | null;
    status: string;
    premium?: boolean;
    requestedBy?: string | null;
  },
) {
  const isDone = v.status === 'Done';
  const [row] = await db
    .insert(versions)
    .values({
      ...v,
      doneSeq: isDone ? sql`nextval('version_done_seq')` : null,
      doneAt: isDone ? new Date() : null,
    })
    .returning();
  return row!;
}

/**
 * Deletes the entries of (app_id, app_ver_id) in the given statuses; app_ver_id null = app-level
 * entries, of every country or of `country` alone (a store version's entry is every country's).
 */
export async function deleteVersions(
  db: Database,
  appId: number,
  appVerId: number | null,
  statuses: readonly string[],
  country?: string,
) {
  return db
    .delete(versions)
    .where(
      and(
        eq(versions.appId, appId),
        appVerId === null ? isNull(versions.appVerId) : eq(versions.appVerId, appVerId),
        appVerId === null && country !== undefined ? eq(versions.country, country) : undefined,
        inArray(versions.status, [...statuses]),
      ),
    )
    .returning({
      seq: versions.seq,
      country: versions.country,
      appId: versions.appId,
      appVerId: versions.appVerId,
      version: versions.version,
      premium: versions.premium,
      fileKey: versions.fileKey,
    });
}

export type RemovedEntry = Awaited<ReturnType<typeof deleteVersions>>[number];

/**
 * Whether an admin refused the app. A track id names one app in every storefront, so a refusal made
 * from one country's entry holds in all of them (the row keeps the country it was made from).
 */
export async function isBlacklisted(db: Database, appId: number) {
  const [row] = await db
    .select({ appId: blacklist.appId })
    .from(blacklist)
    .where(eq(blacklist.appId, appId))
    .limit(1);
  return row !== undefined;
}

export async function addToBlacklist(db: Database, country: string, appId: number, addedBy: string) {
  await db.insert(blacklist).values({ country, appId, addedBy }).onConflictDoNothing();
}

export async function maxDoneSeq(db: Database) {
  const [row] = await db
    .select({ v: sql<string | null>`max(${versions.doneSeq})` })
    .from(versions)
    .where(eq(versions.status, 'Done'));
  return row?.v == null ? undefined : Number(row.v);
}

export async function maxSeq(db: Database) {
  const [row] = await db.select({ v: sql<string | null>`max(${versions.seq})` }).from(versions);
  return row?.v == null ? undefined : Number(row.v);
}

export { versionDoneSeq };
