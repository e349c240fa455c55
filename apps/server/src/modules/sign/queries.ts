import type { SignType } from '@sideport/contracts';
import { and, eq, inArray, isNotNull, isNull, lt, or, sql, type SQL } from 'drizzle-orm';
import { queryRows, type Database } from '../../db/client.js';
import { devices, signRequests, type SignJobState, type SignSource } from '../../db/schema/index.js';
import { leasedTable, type AttemptOutcome } from '../../platform/lease-queue.js';

export type SignRow = typeof signRequests.$inferSelect;

/** One sign of one user: a version in a mode, or Feather (app ids 0, mode 0). */
export interface SignKey {
  userId: string;
  source: SignSource;
  appId: number;
  appVerId: number;
  signType: SignType;
}

/** The lease a worker holds: the row, the worker and the attempt it claimed. */
export interface Lease {
  id: number;
  worker: string;
  attempt: number;
}

const keyIs = (key: SignKey) =>
  and(
    eq(signRequests.userId, key.userId),
    eq(signRequests.source, key.source),
    eq(signRequests.appId, key.appId),
    eq(signRequests.appVerId, key.appVerId),
    eq(signRequests.signType, key.signType),
  );

export async function findSign(db: Database, key: SignKey): Promise<SignRow | undefined> {
  const [row] = await db.select().from(signRequests).where(keyIs(key));
  return row;
}

/** The row of `key`, locked for the caller's transaction. */
export async function lockSign(tx: Database, key: SignKey): Promise<SignRow | undefined> {
  const [row] = await tx.select().from(signRequests).where(keyIs(key)).for('update');
  return row;
}

export async function insertSign(tx: Database, row: typeof signRequests.$inferInsert): Promise<SignRow> {
  const [inserted] = await tx.insert(signRequests).values(row).returning();
  return inserted!;
}

export async function updateSign(
  tx: Database,
  id: number,
  set: Partial<typeof signRequests.$inferInsert>,
): Promise<SignRow | undefined> {
  const [row] = await tx.update(signRequests).set(set).where(eq(signRequests.id, id)).returning();
  return row;
}

export async function findArtifact(db: Database, artifactId: string): Promise<SignRow | undefined> {
  const [row] = await db.select().from(signRequests).where(eq(signRequests.artifactId, artifactId));
  return row;
}

/** Sign requests as leased work (platform/lease-queue.ts): the worker holding one is its `worker`. */
const leases = leasedTable<SignJobState, 'worker', string>({
  columns: {
    id: signRequests.id,
    state: signRequests.state,
    holder: signRequests.worker,
    attempts: signRequests.attempts,
    failures: signRequests.failures,
    lostLeases: signRequests.lostLeases,
    leaseExpiresAt: signRequests.leaseExpiresAt,
    lastReason: signRequests.lastReason,
  },
  holderKey: 'worker',
  states: { queued: 'queued', leased: 'leased', givenUp: 'idle' },
});

const held = (lease: Lease) => leases.held({ id: lease.id, holder: lease.worker, attempt: lease.attempt });

/** A sign given up shows its earlier artifact (Done) when there is one, No otherwise. */
const givenUpStatus = sql<SignRow['status']>`case when ${signRequests.fileKey} is null
  then 'No' else 'Done' end`;

/**
 * Takes the next sign for `worker` in one statement: the oldest queued one, or one whose worker
 * let its lease run out, when that lost lease is not its last (`maxLostLeases`; the sweep gives
 * those up). The lost lease is counted (apart from failures) and said in the reason; the row
 * becomes Process under a new lease and attempt. Signs people asked for come before re-signs of
 * recovery, which go most recently used first. Between users it is round robin: the user a worker
 * served longest ago (their latest claim turn; never served first) goes first, so one user's many
 * signs do not hold another's one; a user's own signs go oldest first.
 */
/**
 * A sign of a user with a device Apple has not listed in a profile yet (devices/apple-wait.ts):
 * it stays queued, since what it made would not install there.
 */
const waitsForApple = sql`exists (
  select 1 from ${devices} d
  where d.user_id = ${signRequests}.user_id and d.status = 'Process' and d.apple_wait_until is not null)`;

export async function claimNextSign(
  db: Database,
  claim: { worker: string; now: Date; leaseSeconds: number; maxLostLeases: number; lostReason: string },
): Promise<SignRow | undefined> {
  const limits = { maxLostLeases: claim.maxLostLeases };
  const next = sql`(
    select id from ${signRequests}
    where (state = 'queued' or (${leases.expired(claim.now)} and not ${leases.isLastLostLease(limits)}))
      and not ${waitsForApple}
    order by resigning, case when resigning then coalesce(last_used_at, signed_at) end desc nulls last,
      (select max(turns.claim_turn) from ${signRequests} turns where turns.user_id = ${signRequests}.user_id) nulls first,
      requested_at, id
    limit 1
    for update skip locked)`;
  // The right-hand sides read the row as it was: `state = 'leased'` means its lease ran out.
  const wasLost = sql`${signRequests.state} = 'leased'`;
  const [row] = await db
    .update(signRequests)
    .set({
      ...leases.claimed(claim.worker, claim.now, claim.leaseSeconds),
      ...leases.lostOnClaim(wasLost, claim.lostReason, limits),
      status: 'Process',
      claimTurn: sql`nextval('sign_claim_turns')`,
    })
    .where(eq(signRequests.id, next))
    .returning();
  return row;
}

/** Renews a lease the worker still holds; false when it lost it (expired and taken, or the row went). */
export async function renewLease(
  db: Database,
  lease: Lease,
  now: Date,
  leaseSeconds: number,
): Promise<boolean> {
  const renewed = await db
    .update(signRequests)
    .set(leases.renewed(now, leaseSeconds))
    .where(held(lease))
    .returning({ id: signRequests.id });
  return renewed.length === 1;
}

/** The row of a lease the worker still holds, locked for the caller's transaction. */
export async function lockHeld(tx: Database, lease: Lease): Promise<SignRow | undefined> {
  const [row] = await tx.select().from(signRequests).where(held(lease)).for('update');
  return row;
}

/**
 * Commits a finished sign while the lease is held: the row becomes Done with the new artifact.
 * Returns the row and the key of the artifact it replaced, or undefined when the lease was lost.
 */
export async function commitArtifact(
  tx: Database,
  lease: Lease,
  artifact: Pick<
    SignRow,
    | 'artifactId'
    | 'fileKey'
    | 'signedAt'
    | 'udids'
    | 'bundleId'
    | 'bundleVersion'
    | 'sizeBytes'
    | 'sourceTag'
    | 'updatedAt'
    | 'certFingerprint'
    | 'certNotBefore'
    | 'certNotAfter'
    | 'profileUuid'
    | 'profileExpiresAt'
    | 'profileCertificates'
  >,
): Promise<{ row: SignRow; previousKey: string | null } | undefined> {
  const previous = await lockHeld(tx, lease);
  if (!previous) return undefined;
  const [row] = await tx
    .update(signRequests)
    .set({
      ...artifact,
      status: 'Done',
      state: 'idle',
      worker: null,
      leaseExpiresAt: null,
      lastReason: null,
      resigning: false,
    })
    .where(eq(signRequests.id, lease.id))
    .returning();
  return { row: row!, previousKey: previous.fileKey };
}

/**
 * An attempt that ended without a result (`endOfAttempt`), on a row the caller holds locked: back
 * to the queue (Pending), or given up: Done again when an earlier artifact remains, No otherwise.
 */
export async function endAttempt(tx: Database, id: number, outcome: AttemptOutcome, now: Date) {
  const [row] = await tx
    .update(signRequests)
    .set({
      ...leases.ended(outcome, now),
      status: outcome.isFinal ? givenUpStatus : 'Pending',
      // A re-sign given up is shown as what remains: the earlier artifact (its preflight says why not) or nothing.
      ...(outcome.isFinal ? { resigning: false } : {}),
    })
    .where(eq(signRequests.id, id))
    .returning();
  return row!;
}

/** A job taken back from a worker that stops: queued again, the attempt not counted. */
export async function releaseLease(db: Database, lease: Lease, now: Date) {
  const [row] = await db
    .update(signRequests)
    .set({ ...leases.released(now), status: 'Pending' })
    .where(held(lease))
    .returning();
  return row;
}

/** Leases that ran out and were the last the sign may lose (`maxLostLeases`), locked: given up by the caller (claims take the others). */
export async function lockLastExpired(
  tx: Database,
  now: Date,
  maxLostLeases: number,
  max: number,
): Promise<SignRow[]> {
  return tx
    .select()
    .from(signRequests)
    .where(and(leases.expired(now), leases.isLastLostLease({ maxLostLeases })))
    .orderBy(signRequests.leaseExpiresAt)
    .limit(max)
    .for('update', { skipLocked: true });
}

/** Every sign of a version, removed with it (an admin deleted the version). */
export async function deleteSignsOfVersion(db: Database, appId: number, appVerId: number) {
  return db
    .delete(signRequests)
    .where(
      and(
        eq(signRequests.source, 'version'),
        eq(signRequests.appId, appId),
        eq(signRequests.appVerId, appVerId),
      ),
    )
    .returning();
}

/** An artifact was installed or downloaded: recovery re-signs the most recently used first. */
export async function markUsed(db: Database, id: number, at: Date) {
  await db.update(signRequests).set({ lastUsedAt: at }).where(eq(signRequests.id, id));
}

/** Which artifacts recovery re-signs: every condition given must hold. */
export interface ResignFilter {
  userIds?: readonly string[];
  /** Signed with one of these certificates. */
  certificateFingerprints?: readonly string[];
  /** Or signed before certificates were recorded (no fingerprint). */
  includeUntracked?: boolean;
  /** Whose profile expires before this. */
  profileExpiringBefore?: Date;
}

/**
 * Queues a re-sign of every artifact `filter` names: Done ones at rest whose last sign did not fail
 * (a failed re-sign is not tried again and again; its owner's new sign is). One statement, so any
 * number of processes queue each artifact once: a row already queued or signing is not at rest.
 */
export async function queueResigns(tx: Database, filter: ResignFilter, now: Date): Promise<SignRow[]> {
  const conditions: SQL[] = [
    isNotNull(signRequests.fileKey),
    eq(signRequests.state, 'idle'),
    isNull(signRequests.lastReason),
  ];
  if (filter.userIds) conditions.push(inArray(signRequests.userId, [...filter.userIds]));
  if (filter.certificateFingerprints || filter.includeUntracked) {
    const fingerprints = filter.certificateFingerprints ?? [];
    conditions.push(
      or(
        fingerprints.length ? inArray(signRequests.certFingerprint, [...fingerprints]) : sql`false`,
        filter.includeUntracked ? isNull(signRequests.certFingerprint) : sql`false`,
      )!,
    );
  }
  if (filter.profileExpiringBefore)
    conditions.push(lt(signRequests.profileExpiresAt, filter.profileExpiringBefore));
  return tx
    .update(signRequests)
    .set({
      state: 'queued',
      status: 'Pending',
      resigning: true,
      attempts: 0,
      failures: 0,
      lostLeases: 0,
      requestedAt: now,
      updatedAt: now,
    })
    .where(and(...conditions))
    .returning();
}

/** The certificates the stored artifacts were signed with, and whether any predate their recording. */
export async function artifactCertificates(
  db: Database,
): Promise<{ fingerprints: string[]; untracked: boolean }> {
  const rows = await queryRows<{ fingerprint: string | null }>(
    db,
    sql`select distinct cert_fingerprint as fingerprint from ${signRequests} where file_key is not null`,
  );
  return {
    fingerprints: rows.flatMap((r) => (r.fingerprint === null ? [] : [r.fingerprint])),
    untracked: rows.some((r) => r.fingerprint === null),
  };
}

// pg_try_advisory_xact_lock key: one process at a time runs a recovery pass.
const RECOVERY_LOCK_KEY = 0x5352_4356; // 'SRCV'

/**
 * Runs `work` while this process holds the recovery lock, or not at all (undefined) when another
 * process does: the lock belongs to a transaction left open while `work` runs on other
 * connections, so a process that dies mid-pass lets go of it with its connection. PostgreSQL
 * only: PGlite serves one process, whose single connection would wait on the open transaction.
 */
export async function whileRecoveryLocked<T>(db: Database, work: () => Promise<T>): Promise<T | undefined> {
  return db.transaction(async (tx) => {
    const [row] = await queryRows<{ locked: boolean }>(
      tx,
      sql`select pg_try_advisory_xact_lock(${RECOVERY_LOCK_KEY}) as locked`,
    );
    return row?.locked ? work() : undefined;
  });
}

/** The names of the apps a user installed (an install link handed out) before `at`, each once. */
export async function titlesInstalledBefore(db: Database, userId: string, at: Date): Promise<string[]> {
  const rows = await db
    .selectDistinct({ title: signRequests.title })
    .from(signRequests)
    .where(
      and(
        eq(signRequests.userId, userId),
        eq(signRequests.source, 'version'),
        isNotNull(signRequests.lastUsedAt),
        lt(signRequests.lastUsedAt, at),
      ),
    )
    .orderBy(signRequests.title);
  return rows.map((r) => r.title);
}
