import type { AgentJob, FailRequest, HeartbeatRequest, JobKind, StoreVersion } from '@sideport/contracts';
import type { Database } from '../../db/client.js';
import { fail, notFound } from '../../platform/errors.js';
import { waitForEvent, type EventBus } from '../../platform/events.js';
import { createClaimBatcher, endOfAttempt, type AttemptEnd } from '../../platform/lease-queue.js';
import type { CatalogService } from '../catalog/service.js';
import { noMetrics, type ServiceMetrics } from '../metrics/registry.js';
import { entryEvent, publishEntry } from './entry-events.js';
import * as q from './queries.js';

/**
 * The decrypt jobs as a lease queue (platform/lease-queue.ts): an agent claims a job, holds it by
 * its heartbeats, and hands it back or fails it; an admin retries an entry; leases that ran out go
 * back to the queue. What an agent's result becomes (the IPA checked and stored, the entry Done)
 * is results.ts, which finishes its job under the lease held here.
 */

export interface QueueSettings {
  leaseSeconds: number;
  /** Failed attempts (the command's failures, refused IPAs) before the entry becomes Not. */
  maxAttempts: number;
  /** Lost leases (agents that stopped answering, were stopped or revoked) before the entry becomes Not. */
  maxLostLeases: number;
}

export interface JobQueueDeps {
  db: Database;
  clock: () => Date;
  bus: EventBus;
  catalog: Pick<CatalogService, 'lookupApp'>;
  settings: QueueSettings;
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
  metrics?: ServiceMetrics;
}

/** An agent as the job routes know it (authenticated by its bearer token). */
export interface AgentRef {
  id: number;
  name: string;
}

/**
 * The lease an agent holds: the job id and the attempt it claimed. A job that went back to the
 * queue and was claimed again (even by the same agent) has a new attempt number, so an old
 * process can never act on its successor's work.
 */
export const leaseId = (job: { id: number; attempts: number }) => `${job.id}-${job.attempts}`;

export function parseLeaseId(value: string): { jobId: number; attempt: number } {
  const match = /^([1-9]\d{0,15})-([1-9]\d{0,5})$/.exec(value);
  if (!match) throw notFound('This job');
  return { jobId: Number(match[1]), attempt: Number(match[2]) };
}

/** A call under a lease the agent no longer holds: 409, its work was taken back. */
export const leaseLost = () => fail('LEASE_LOST');

/**
 * A call on a job its own lease finished (a heartbeat that crossed the upload's answer, an upload
 * sent again after a lost answer): not 409, which the agent takes for its work being taken back.
 */
const jobFinished = () => fail('JOB_FINISHED');

const REASON_LEASE_EXPIRED = 'The agent stopped answering before it finished.';
const REASON_REVOKED = 'The agent working on it was revoked.';

export function createJobQueue(deps: JobQueueDeps) {
  const { db, clock, bus, catalog, settings, log, metrics = noMetrics } = deps;
  const now = () => clock();
  const limits = { maxFailures: settings.maxAttempts, maxLostLeases: settings.maxLostLeases };

  /**
   * One attempt ended without a result (platform/lease-queue.ts): back to the queue (Pending), or
   * Not with the reason after the last failed attempt (DECRYPT_MAX_ATTEMPTS), the last lost lease
   * (DECRYPT_MAX_LOST_LEASES), or when the agent says the app is unsupported. Runs in the caller's
   * transaction, on a row it holds locked.
   */
  async function endAttempt(tx: Database, job: q.JobRow, end: AttemptEnd) {
    const outcome = endOfAttempt(job, end, limits);
    const { isFinal, reason } = outcome;
    await q.endJobAttempt(tx, job.id, outcome, now());
    // An agent's failed count is its command's failures; a lease it lost says nothing of them.
    if (job.agentId !== null && end.kind === 'failed') await q.countAgentOutcome(tx, job.agentId, 'failed');
    if (job.kind === 'decrypt' && job.versionSeq !== null) {
      const entry = await q.updateEntry(tx, job.versionSeq, {
        status: isFinal ? 'Not' : 'Pending',
        reason,
        progress: null,
        updatedAt: now(),
      });
      if (entry) await publishEntry(bus, entry, tx);
    }
    if (job.kind === 'versions') {
      // Downgrade requests waiting on it answer with what is known.
      await bus.publish({ kind: 'versions-listed', country: job.country, appId: job.appId }, tx);
    }
    if (!isFinal) await bus.publish({ kind: 'jobs-queued' }, tx);
    return isFinal ? ('Not' as const) : ('Pending' as const);
  }

  /** Puts back (or fails) every job whose lease ran out. Safe to run from every process at once. */
  async function sweepExpiredLeases(): Promise<number> {
    const expired = await db.transaction(async (tx) => {
      const locked = await q.lockExpiredLeases(tx, now(), 100);
      for (const job of locked) await endAttempt(tx, job, { kind: 'lost', reason: REASON_LEASE_EXPIRED });
      return locked;
    });
    // Counted once committed: a sweep that rolled back expired nothing.
    for (const job of expired) metrics.job(job.kind, 'lease_expired');
    if (expired.length)
      log.info({ jobs: expired.map((j) => j.id) }, 'leases expired; jobs returned to the queue');
    return expired.length;
  }

  /** Concurrent claims share one statement (platform/lease-queue.ts); the entries they took are told before they are answered. */
  const claims = createClaimBatcher(
    (agentIds: number[], kinds: readonly JobKind[]) =>
      q.claimNextJobs(db, { agentIds, kinds, now: now(), leaseSeconds: settings.leaseSeconds }),
    async (claimed) => {
      const events = claimed.flatMap((job) =>
        job.entry
          ? [
              {
                kind: 'live' as const,
                event: entryEvent({
                  ...job.entry,
                  country: job.country,
                  appId: job.appId,
                  status: 'Downloading',
                  progress: 0,
                }),
              },
            ]
          : [],
      );
      await bus
        .publishMany(events)
        .catch((err: unknown) => log.warn({ err }, 'could not publish claimed entries'));
    },
  );

  /**
   * One claim: the batcher's single statement takes the job and marks its entry Downloading; then
   * the change is told to every process (the claim is committed by then: nobody hears of one that
   * was not).
   */
  async function claimOnce(agent: AgentRef, kinds: readonly JobKind[]): Promise<AgentJob | undefined> {
    const job = await claims.claim(agent.id, kinds);
    if (!job) return undefined;
    metrics.job(job.kind, 'claimed');
    const bundleId = job.bundleId ?? (await catalog.lookupApp(job.country, job.appId)).bundleId;
    return {
      id: leaseId(job),
      kind: job.kind,
      country: job.country.toLowerCase(),
      app_id: String(job.appId),
      bundle_id: bundleId,
      app_ver_id: job.entry?.appVerId == null ? null : String(job.entry.appVerId),
      version: job.entry?.appVerId == null ? null : (job.entry.version ?? null),
      attempt: job.attempts,
      lease_seconds: settings.leaseSeconds,
    };
  }

  /** Why a lease is not held: the job was finished under it (410), or it ended otherwise (409). */
  function leaseEnded(job: q.JobRow | undefined, agent: AgentRef, attempt: number) {
    const isFinishedByIt = job?.state === 'done' && job.agentId === agent.id && job.attempts === attempt;
    return isFinishedByIt ? jobFinished() : leaseLost();
  }

  /** Holds the job's row for the length of `work`, when the agent still holds this lease. */
  async function withHeldJob<T>(
    agent: AgentRef,
    lease: string,
    work: (tx: Database, job: q.JobRow) => Promise<T>,
  ) {
    const { jobId, attempt } = parseLeaseId(lease);
    return db.transaction(async (tx) => {
      const job = await q.lockHeldJob(tx, { jobId, agentId: agent.id, attempt });
      if (!job) throw leaseEnded(await q.findJob(tx, jobId), agent, attempt);
      return work(tx, job);
    });
  }

  return {
    sweepExpiredLeases,

    /**
     * The next job for this agent, or null when none came within `waitSeconds` (a long poll:
     * a job queued meanwhile by any process wakes it at once).
     */
    async claim(
      agent: AgentRef,
      kinds: readonly JobKind[],
      waitSeconds: number,
      signal?: AbortSignal,
    ): Promise<AgentJob | null> {
      const deadline = Date.now() + waitSeconds * 1000;
      // The server is closing: waiting claims answer at once instead of holding the close up.
      const closing = new Promise<undefined>((resolve) => {
        if (signal?.aborted) resolve(undefined);
        signal?.addEventListener('abort', () => resolve(undefined), { once: true });
      });
      for (;;) {
        // Listen before looking, so a job queued between the look and the wait is not missed.
        const queued = waitForEvent(bus, (e) => e.kind === 'jobs-queued', Math.max(0, deadline - Date.now()));
        const job = await claimOnce(agent, kinds);
        if (job) {
          void queued.catch(() => {});
          return job;
        }
        if (Date.now() >= deadline || signal?.aborted || !(await Promise.race([queued, closing])))
          return null;
      }
    },

    /** A job claimed for an agent that was gone before it heard of it: back to the queue, the attempt not counted. */
    async unclaim(agent: AgentRef, lease: string) {
      await withHeldJob(agent, lease, async (tx, job) => {
        await q.releaseJob(tx, job.id, now());
        if (job.kind === 'decrypt' && job.versionSeq !== null) {
          const entry = await q.updateEntry(tx, job.versionSeq, {
            status: 'Pending',
            progress: null,
            updatedAt: now(),
          });
          if (entry) await publishEntry(bus, entry, tx);
        }
        await bus.publish({ kind: 'jobs-queued' }, tx);
      }).catch((err: unknown) =>
        log.warn({ err, lease }, 'could not put back a job claimed for an agent that left'),
      );
    },

    async heartbeat(agent: AgentRef, lease: string, report: HeartbeatRequest) {
      return withHeldJob(agent, lease, async (tx, job) => {
        await q.renewJobLease(tx, job.id, now(), settings.leaseSeconds, {
          ...(report.app_ver_id !== undefined ? { reportedAppVerId: Number(report.app_ver_id) } : {}),
          ...(report.version !== undefined ? { reportedVersion: report.version } : {}),
        });
        if (job.kind === 'decrypt' && job.versionSeq !== null) {
          const entry = await q.findEntry(tx, job.versionSeq);
          const set = {
            ...(report.status !== undefined ? { status: report.status } : {}),
            ...(report.progress !== undefined ? { progress: report.progress } : {}),
            // An app-level entry shows the version the agent found; a versioned one keeps its own.
            ...(report.version !== undefined && entry?.appVerId === null ? { version: report.version } : {}),
          };
          if (entry && Object.keys(set).length) {
            const changed = await q.updateEntry(tx, entry.seq, { ...set, updatedAt: now() });
            if (changed) await publishEntry(bus, changed, tx);
          }
        }
        return { lease_seconds: settings.leaseSeconds };
      });
    },

    /**
     * Exit code 3 (`unsupported`) makes the entry Not at once; any other failure is retried. An
     * agent that is stopping (`stopped`) hands the job back: a lost lease, not a failed attempt.
     */
    async fail(agent: AgentRef, lease: string, failure: FailRequest) {
      let kind: JobKind = 'decrypt';
      const isHandedBack = failure.stopped === true && failure.unsupported !== true;
      const status = await withHeldJob(agent, lease, (tx, job) => {
        kind = job.kind;
        return endAttempt(
          tx,
          job,
          isHandedBack
            ? { kind: 'lost', reason: failure.reason }
            : { kind: 'failed', reason: failure.reason, final: failure.unsupported === true },
        );
      });
      if (!isHandedBack) metrics.job(kind, 'failed');
      return { status };
    },

    async submitVersions(agent: AgentRef, lease: string, list: StoreVersion[]) {
      await withHeldJob(agent, lease, async (tx, job) => {
        if (job.kind !== 'versions') throw fail('NOT_A_VERSIONS_JOB');
        const seen = new Set<string>();
        const versions = list
          .filter((v) => !seen.has(v.app_ver_id) && seen.add(v.app_ver_id))
          .map((v) => ({ appVerId: Number(v.app_ver_id), version: v.version }));
        await q.saveVersionList(tx, { country: job.country, appId: job.appId, versions, now: now() });
        await q.setJobState(tx, job.id, 'done', { leaseExpiresAt: null, lastReason: null, updatedAt: now() });
        if (job.agentId !== null) await q.countAgentOutcome(tx, job.agentId, 'done');
        await bus.publish({ kind: 'versions-listed', country: job.country, appId: job.appId }, tx);
      });
      metrics.job('versions', 'done');
    },

    /** Admin: a failed (Not) or stuck entry goes back to the queue with its failures and lost leases counted anew. */
    async retry(seq: number) {
      const work = db.transaction(async (tx) => {
        const entry = await q.findEntry(tx, seq);
        if (!entry || entry.status === 'Done') throw notFound('This queue entry');
        // A new job row rather than the old one with its attempts reset: lease ids are
        // `{job}-{attempt}`, so the old row would hand out `{job}-1` again and the agent still
        // holding the first lease would take the new attempt for its own.
        const job = await q.jobOfEntry(tx, seq);
        if (job) await q.deleteJob(tx, job.id);
        await q.insertJob(tx, {
          kind: 'decrypt',
          versionSeq: seq,
          country: entry.country,
          appId: entry.appId,
          priority: entry.premium ? 1 : 0,
          now: now(),
        });
        const pending = (await q.updateEntry(tx, seq, {
          status: 'Pending',
          reason: null,
          progress: null,
          updatedAt: now(),
        }))!;
        await publishEntry(bus, pending, tx);
        await bus.publish({ kind: 'jobs-queued' }, tx);
        return pending;
      });
      return work.catch((err: unknown) => {
        if (q.isUniqueViolation(err)) throw fail('ALREADY_REQUESTED');
        throw err;
      });
    },

    /** The admin console's queue: working, waiting and failed entries with attempts and reasons. */
    queuePage: (page: number, pageSize: number) => q.adminQueuePage(db, page, pageSize),

    /** Revoking an agent gives its jobs back at once instead of waiting for their leases. */
    async releaseJobsOf(agentId: number) {
      await db.transaction(async (tx) => {
        for (const job of await q.leasedJobsOf(tx, agentId))
          await endAttempt(tx, job, { kind: 'lost', reason: REASON_REVOKED });
      });
    },

    /** What an agent's result is stored under (results.ts): its held lease, and how an attempt ends. */
    lease: { withHeldJob, endAttempt, leaseEnded },
  };
}

export type JobQueue = ReturnType<typeof createJobQueue>;
