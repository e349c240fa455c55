import { and, asc, desc, eq, inArray, isNotNull, isNull, or, sql } from 'drizzle-orm';
import { queryRows, type Database } from '../../db/client.js';
import { agents, apps, jobs, storeVersionLists, versions, type JobState } from '../../db/schema/index.js';
import { leasedTable, leaseUntil, type AttemptOutcome } from '../../platform/lease-queue.js';

export type EntryRow = typeof versions.$inferSelect;
export type JobRow = typeof jobs.$inferSelect;

export const ACTIVE_STATUSES = ['Pending', 'Downloading', 'Downloaded', 'Process'] as const;

export { isUniqueViolation } from '../../db/client.js';

// ---- decrypt entries ----

export async function findEntry(db: Database, seq: number): Promise<EntryRow | undefined> {
  const [row] = await db.select().from(versions).where(eq(versions.seq, seq));
  return row;
}

/** The waiting or working app-level request (version not known yet) of an app in a country. */
export async function findActiveAppLevel(db: Database, country: string, appId: number) {
  const [row] = await db
    .select()
    .from(versions)
    .where(
      and(
        eq(versions.country, country),
        eq(versions.appId, appId),
        isNull(versions.appVerId),
        inArray(versions.status, [...ACTIVE_STATUSES]),
      ),
    );
  return row;
}

export async function findByAppVerId(db: Database, appId: number, appVerId: number) {
  const [row] = await db
    .select()
    .from(versions)
    .where(and(eq(versions.appId, appId), eq(versions.appVerId, appVerId)));
  return row;
}

/**
 * The entries of an app that a country's listing shows (docs/architecture.md, Data): the country's
 * own app-level requests, and every entry of a known store version, whichever country asked for
 * it. A store version id names one binary in every storefront, so its entry is one for all of them.
 */
const listedIn = (country: string, appId: number) =>
  and(eq(versions.appId, appId), or(isNotNull(versions.appVerId), eq(versions.country, country)));

/** An entry of the store's current version string as the country's listing shows it, preferring a Done one. */
export async function findByVersionString(db: Database, country: string, appId: number, version: string) {
  const [row] = await db
    .select()
    .from(versions)
    .where(and(listedIn(country, appId), eq(versions.version, version)))
    .orderBy(sql`(${versions.status} = 'Done') desc`, desc(versions.seq))
    .limit(1);
  return row;
}

/** Every entry a country's listing of an app shows, newest version first (app-level requests on top). */
export async function entriesOfApp(db: Database, country: string, appId: number) {
  return db
    .select()
    .from(versions)
    .where(listedIn(country, appId))
    .orderBy(sql`${versions.appVerId} desc nulls first`, desc(versions.seq));
}

export async function insertEntry(
  db: Database,
  entry: {
    country: string;
    appId: number;
    appVerId: number | null;
    version: string | null;
    status: 'Pending' | 'Not';
    premium: boolean;
    /** null for an operator's import. */
    requestedBy: string | null;
    reason?: string | null;
    now: Date;
  },
) {
  const { now, ...values } = entry;
  const [row] = await db
    .insert(versions)
    .values({ ...values, requestedAt: now, updatedAt: now })
    .returning();
  return row!;
}

export async function updateEntry(db: Database, seq: number, set: Partial<typeof versions.$inferInsert>) {
  const [row] = await db.update(versions).set(set).where(eq(versions.seq, seq)).returning();
  return row;
}

/** Done: the checked file, its facts and a place at the top of the latest list. */
export async function markEntryDone(
  db: Database,
  seq: number,
  done: {
    appVerId: number;
    version: string;
    minimumOs: string | null;
    sizeBytes: number;
    fileKey: string;
    now: Date;
  },
) {
  const [row] = await db
    .update(versions)
    .set({
      status: 'Done',
      appVerId: done.appVerId,
      version: done.version,
      minimumOs: done.minimumOs,
      sizeBytes: done.sizeBytes,
      fileKey: done.fileKey,
      reason: null,
      progress: null,
      doneSeq: sql`nextval('version_done_seq')`,
      doneAt: done.now,
      updatedAt: done.now,
    })
    .where(eq(versions.seq, seq))
    .returning();
  return row!;
}

export async function deleteEntry(db: Database, seq: number) {
  const [row] = await db.delete(versions).where(eq(versions.seq, seq)).returning();
  return row;
}

// ---- jobs ----

export async function insertJob(
  db: Database,
  job: {
    kind: 'decrypt' | 'versions';
    versionSeq?: number;
    country: string;
    appId: number;
    priority: number;
    now: Date;
  },
) {
  const { now, ...values } = job;
  const [row] = await db
    .insert(jobs)
    .values({ ...values, createdAt: now, updatedAt: now })
    .onConflictDoNothing()
    .returning();
  return row;
}

export async function jobOfEntry(db: Database, versionSeq: number) {
  const [row] = await db.select().from(jobs).where(eq(jobs.versionSeq, versionSeq));
  return row;
}

export async function findJob(db: Database, id: number) {
  const [row] = await db.select().from(jobs).where(eq(jobs.id, id));
  return row;
}

export async function deleteJob(db: Database, id: number) {
  await db.delete(jobs).where(eq(jobs.id, id));
}

export async function openVersionsJob(db: Database, country: string, appId: number) {
  const [row] = await db
    .select()
    .from(jobs)
    .where(
      and(
        eq(jobs.kind, 'versions'),
        eq(jobs.country, country),
        eq(jobs.appId, appId),
        inArray(jobs.state, ['queued', 'leased']),
      ),
    );
  return row;
}

export async function updateJob(db: Database, id: number, set: Partial<typeof jobs.$inferInsert>) {
  const [row] = await db.update(jobs).set(set).where(eq(jobs.id, id)).returning();
  return row;
}

/** A job just claimed, with what the agent is told of it. */
export interface ClaimedJob {
  id: number;
  agentId: number;
  /** Which of the claim's agents (0-based position in `agentIds`) it went to. */
  slot: number;
  kind: 'decrypt' | 'versions';
  country: string;
  appId: number;
  attempts: number;
  /** The decrypt entry, now Downloading (decrypt jobs). */
  entry?: { seq: number; appVerId: number | null; version: string | null; premium: boolean };
  /** From the app's store record; undefined when the catalogue has none yet. */
  bundleId?: string;
}

interface ClaimedRow {
  id: string;
  agent_id: string;
  slot: string;
  kind: 'decrypt' | 'versions';
  country: string;
  app_id: string;
  attempts: number;
  seq: string | null;
  app_ver_id: string | null;
  version: string | null;
  premium: boolean | null;
  bundle_id: string | null;
}

/**
 * Takes the next queued jobs (highest priority, then oldest), one for each agent in `agentIds`
 * (in that order), marks their entries Downloading and reads what the agents need, in one
 * statement: atomic on its own, one round trip however many agents are served. `FOR UPDATE SKIP
 * LOCKED` lets concurrent claimers pass over rows another is taking, so no job is ever handed to
 * two agents and nobody waits on a lock.
 */
export async function claimNextJobs(
  db: Database,
  claim: { agentIds: readonly number[]; kinds: readonly string[]; now: Date; leaseSeconds: number },
): Promise<ClaimedJob[]> {
  const now = claim.now.toISOString();
  const until = leaseUntil(claim.now, claim.leaseSeconds).toISOString();
  const agentIds = sql.join(
    claim.agentIds.map((id) => sql`${id}`),
    sql`, `,
  );
  const rows = await queryRows<ClaimedRow>(
    db,
    sql`
      with wanted as (
        select agent_id, n from unnest(array[${agentIds}]::bigint[]) with ordinality as w(agent_id, n)
      ), picked as (
        select id, priority from ${jobs}
        where state = 'queued' and kind in (${sql.join(
          claim.kinds.map((k) => sql`${k}`),
          sql`, `,
        )})
        order by priority desc, id
        limit ${claim.agentIds.length}
        for update skip locked
      ), next as (
        select id, row_number() over (order by priority desc, id) as n from picked
      ), claimed as (
        update ${jobs} j
        set state = 'leased', agent_id = w.agent_id, attempts = j.attempts + 1,
            lease_expires_at = ${until}, updated_at = ${now}
        from next join wanted w on w.n = next.n
        where j.id = next.id
        returning j.id, j.kind, j.version_seq, j.country, j.app_id, j.attempts, j.agent_id, w.n as slot
      ), entry as (
        update ${versions} v
        set status = 'Downloading', progress = 0, updated_at = ${now}
        from claimed c where c.kind = 'decrypt' and v.seq = c.version_seq
        returning v.seq, v.app_ver_id, v.version, v.premium
      )
      select c.id, c.kind, c.country, c.app_id, c.attempts, c.agent_id, c.slot, e.seq, e.app_ver_id, e.version, e.premium, a.bundle_id
      from claimed c
      left join entry e on e.seq = c.version_seq
      left join ${apps} a on a.country = c.country and a.app_id = c.app_id`,
  );
  return rows.map((row) => ({
    id: Number(row.id),
    agentId: Number(row.agent_id),
    slot: Number(row.slot) - 1,
    kind: row.kind,
    country: row.country,
    appId: Number(row.app_id),
    attempts: Number(row.attempts),
    ...(row.seq !== null
      ? {
          entry: {
            seq: Number(row.seq),
            appVerId: row.app_ver_id === null ? null : Number(row.app_ver_id),
            version: row.version,
            premium: row.premium ?? false,
          },
        }
      : {}),
    ...(row.bundle_id !== null ? { bundleId: row.bundle_id } : {}),
  }));
}

/** Jobs as leased work (platform/lease-queue.ts): the agent holding one is its `agentId`. */
const leases = leasedTable<JobState, 'agentId', number>({
  columns: {
    id: jobs.id,
    state: jobs.state,
    holder: jobs.agentId,
    attempts: jobs.attempts,
    failures: jobs.failures,
    lostLeases: jobs.lostLeases,
    leaseExpiresAt: jobs.leaseExpiresAt,
    lastReason: jobs.lastReason,
  },
  holderKey: 'agentId',
  states: { queued: 'queued', leased: 'leased', givenUp: 'failed' },
});

/** Leased jobs whose agent stopped heart-beating, locked for the caller to put back or fail. */
export async function lockExpiredLeases(db: Database, now: Date, max: number) {
  return db
    .select()
    .from(jobs)
    .where(leases.expired(now))
    .orderBy(jobs.leaseExpiresAt)
    .limit(max)
    .for('update', { skipLocked: true });
}

/** Renews the lease of a job the caller holds locked, with what the agent reported meanwhile. */
export async function renewJobLease(
  db: Database,
  id: number,
  now: Date,
  leaseSeconds: number,
  reported: Pick<typeof jobs.$inferInsert, 'reportedAppVerId' | 'reportedVersion'>,
) {
  await updateJob(db, id, { ...leases.renewed(now, leaseSeconds), ...reported, updatedAt: now });
}

/** Locks the job row when the agent still holds this attempt's lease. */
export async function lockHeldJob(db: Database, lease: { jobId: number; agentId: number; attempt: number }) {
  const [row] = await db
    .select()
    .from(jobs)
    .where(leases.held({ id: lease.jobId, holder: lease.agentId, attempt: lease.attempt }))
    .for('update');
  return row;
}

/** An attempt that ended without a result (`endOfAttempt`), on a job the caller holds locked. */
export async function endJobAttempt(db: Database, id: number, outcome: AttemptOutcome, now: Date) {
  return updateJob(db, id, leases.ended(outcome, now));
}

/** A job handed back before its agent heard of it, locked by the caller: queued, the attempt not counted. */
export async function releaseJob(db: Database, id: number, now: Date) {
  await db.update(jobs).set(leases.released(now)).where(eq(jobs.id, id));
}

/** An agent's leased jobs, locked for the caller to put back. */
export async function leasedJobsOf(db: Database, agentId: number) {
  return db
    .select()
    .from(jobs)
    .where(and(eq(jobs.agentId, agentId), eq(jobs.state, 'leased')))
    .for('update');
}

export async function setJobState(
  db: Database,
  id: number,
  state: JobState,
  set: Partial<typeof jobs.$inferInsert> = {},
) {
  return updateJob(db, id, { state, ...set });
}

// ---- version histories ----

export async function findVersionList(db: Database, country: string, appId: number) {
  const [row] = await db
    .select()
    .from(storeVersionLists)
    .where(and(eq(storeVersionLists.country, country), eq(storeVersionLists.appId, appId)));
  return row;
}

export async function saveVersionList(
  db: Database,
  list: { country: string; appId: number; versions: Array<{ appVerId: number; version: string }>; now: Date },
) {
  await db
    .insert(storeVersionLists)
    .values({ country: list.country, appId: list.appId, versions: list.versions, fetchedAt: list.now })
    .onConflictDoUpdate({
      target: [storeVersionLists.country, storeVersionLists.appId],
      set: { versions: list.versions, fetchedAt: list.now },
    });
}

// ---- agents' counters ----

export async function countAgentOutcome(db: Database, agentId: number, outcome: 'done' | 'failed') {
  await db
    .update(agents)
    .set(
      outcome === 'done'
        ? { doneCount: sql`${agents.doneCount} + 1` }
        : { failedCount: sql`${agents.failedCount} + 1` },
    )
    .where(eq(agents.id, agentId));
}

// ---- admin console ----

export interface AdminQueueRow {
  entry: EntryRow;
  app: { name: string } | null;
  job: { failures: number; lostLeases: number; state: string; lastReason: string | null } | null;
  agentName: string | null;
}

/** Entries an admin looks after: working, waiting and failed ones, newest first. */
export async function adminQueuePage(db: Database, page: number, pageSize: number): Promise<AdminQueueRow[]> {
  const rows = await db
    .select({
      entry: versions,
      appName: apps.name,
      failures: jobs.failures,
      lostLeases: jobs.lostLeases,
      jobState: jobs.state,
      lastReason: jobs.lastReason,
      agentName: agents.name,
    })
    .from(versions)
    .leftJoin(apps, and(eq(apps.country, versions.country), eq(apps.appId, versions.appId)))
    .leftJoin(jobs, eq(jobs.versionSeq, versions.seq))
    .leftJoin(agents, and(eq(agents.id, jobs.agentId), eq(jobs.state, 'leased')))
    .where(inArray(versions.status, [...ACTIVE_STATUSES, 'Not']))
    .orderBy(sql`(${versions.status} = 'Not')`, desc(versions.premium), asc(versions.seq))
    .limit(pageSize)
    .offset(page * pageSize);
  return rows.map((r) => ({
    entry: r.entry,
    app: r.appName === null ? null : { name: r.appName },
    job:
      r.jobState === null
        ? null
        : {
            failures: r.failures ?? 0,
            lostLeases: r.lostLeases ?? 0,
            state: r.jobState,
            lastReason: r.lastReason,
          },
    agentName: r.agentName,
  }));
}
