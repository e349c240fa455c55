import { randomUUID } from 'node:crypto';
import { copyFile, mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import {
  findContradiction,
  verifyDecrypted,
  type DecryptedVerdict,
  type DecryptExpectation,
} from '@sideport/ipa';
import type { UploadAnswer, UploadQuery } from '@sideport/contracts';
import type { Database } from '../../db/client.js';
import { fail } from '../../platform/errors.js';
import type { EventBus } from '../../platform/events.js';
import type { DiskGuard } from '../../platform/disk-space.js';
import type { FileStore } from '../../platform/storage.js';
import type { DecryptUsage } from '../billing/service.js';
import type { CatalogService } from '../catalog/service.js';
import { noMetrics, type ServiceMetrics } from '../metrics/registry.js';
import { publishEntry } from './entry-events.js';
import * as q from './queries.js';
import { leaseLost, parseLeaseId, type AgentRef, type JobQueue } from './queue.js';
import { receiveToFile, uploadTooLarge } from './upload.js';

/**
 * What a decrypted IPA becomes: an agent's upload or an operator's import, checked with
 * packages/ipa, stored, and its entry made Done (or given way to the same version Done before).
 * An agent's result is taken under the lease it holds (queue.ts).
 */

export interface ResultSettings {
  maxIpaBytes: number;
  /** Where uploads are received before they are checked (same disk as local storage). */
  tmpDir: string;
}

export interface JobResultsDeps {
  db: Database;
  clock: () => Date;
  bus: EventBus;
  files: FileStore;
  catalog: Pick<CatalogService, 'lookupApp' | 'lookupAppByBundleId'>;
  settings: ResultSettings;
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
  metrics?: ServiceMetrics;
  /** Gives back the daily count of a request that turned out to be a version Done before. */
  usage?: Pick<DecryptUsage, 'giveBack'>;
  /** The data disk's free space: an upload that would fill it is refused before it is written. */
  disk?: Pick<DiskGuard, 'ensureRoom'>;
  /**
   * Called after a version became Done (the sign service warms its digest cache from it). An
   * agent's upload is answered without waiting for it (see `settle`); an import waits.
   */
  onVersionDone?: (done: {
    appId: number;
    appVerId: number;
    fileKey: string;
    localFile?: string;
  }) => Promise<void>;
}

/** What `importIpa` made: a Done version of a store app. */
export interface ImportAnswer extends UploadAnswer {
  country: string;
  app_id: string;
  name: string;
}

type VerifiedIpa = Extract<DecryptedVerdict, { ok: true }>;

/**
 * What an entry's IPA must be of its version: a versioned entry's own store version id and version
 * string; an app-level one's (the store's current version) what the agent reported finding.
 */
function expectedVersion(
  entry: Pick<q.EntryRow, 'appVerId' | 'version'>,
  reported: { appVerId?: string | undefined; version?: string | undefined },
): DecryptExpectation {
  if (entry.appVerId !== null) {
    return {
      appVerId: String(entry.appVerId),
      ...(entry.version !== null ? { version: entry.version } : {}),
    };
  }
  return {
    ...(reported.appVerId !== undefined ? { appVerId: reported.appVerId } : {}),
    ...(reported.version !== undefined ? { version: reported.version } : {}),
    versionSource: 'reported',
  };
}

/** What became of an uploaded or imported version: kept as `entry`, or given way to `entry` (Done before). */
type Settled = { entry: q.EntryRow; keep: boolean };

export function createJobResults(deps: JobResultsDeps, lease: JobQueue['lease']) {
  const { db, clock, bus, files, catalog, settings, log, metrics = noMetrics } = deps;
  const { withHeldJob, endAttempt, leaseEnded } = lease;
  const now = () => clock();

  /** What runs after versions became Done and no answer waits for: `settle` waits for it. */
  const afterDoneWork = new Set<Promise<void>>();

  /**
   * The work after a version became Done (the digest cache warm-up). Its failure is logged, never
   * thrown: the version is Done either way, and a sign of it digests what the cache lacks.
   */
  function afterDone(appId: number, appVerId: number, fileKey: string): Promise<void> {
    if (!deps.onVersionDone) return Promise.resolve();
    const localFile = files.localPath(fileKey);
    const work = deps
      .onVersionDone({ appId, appVerId, fileKey, ...(localFile ? { localFile } : {}) })
      .catch((err: unknown) =>
        log.warn({ err, appId, appVerId }, 'the work after a version became Done failed'),
      );
    afterDoneWork.add(work);
    void work.finally(() => afterDoneWork.delete(work));
    return work;
  }

  /** Makes the app-level entry the version the agent uploaded, or gives way to one that exists. */
  async function settleVersion(tx: Database, entry: q.EntryRow, appVerId: number): Promise<Settled> {
    if (entry.appVerId !== null) return { entry, keep: true as const };
    const other = await q.findByAppVerId(tx, entry.appId, appVerId);
    if (!other || other.seq === entry.seq) return { entry, keep: true as const };
    if (other.status === 'Done') return { entry: other, keep: false as const };
    // A request for that very version waits or failed: this result answers it too. One still
    // waiting did no work of its own, so its requester's daily count comes back.
    await q.deleteEntry(tx, other.seq);
    await publishEntry(bus, other, tx, { deleted: true });
    if (other.requestedBy !== null && (q.ACTIVE_STATUSES as readonly string[]).includes(other.status))
      await deps.usage?.giveBack(other.requestedBy, other.requestedAt, tx);
    return { entry, keep: true as const };
  }

  /**
   * Stores a checked IPA and makes its entry Done inside `hold` (the agent's lease, or a plain
   * transaction for an import), which supplies the entry and finishes the job. An entry of the
   * same version that is already Done wins and the new copy is dropped; a file stored for a
   * result that did not commit is removed.
   */
  async function storeResult(options: {
    file: { path: string; sizeBytes: number };
    verdict: VerifiedIpa;
    appId: number;
    appVerId: number;
    hold: (work: (tx: Database, entry: q.EntryRow) => Promise<Settled>) => Promise<Settled>;
    /** 'background': answer once the version is Done, and run the work after it in the background. */
    afterDone: 'await' | 'background';
  }) {
    const { file, verdict, appVerId } = options;
    // Stored before the transaction: a large file on S3 takes a while, and no row waits on it.
    const fileKey = `ipa/${options.appId}/${appVerId}/${randomUUID()}.ipa`;
    await files.putFile(fileKey, file.path);
    let done: Settled;
    try {
      done = await options.hold(async (tx, entry) => {
        const settled = await settleVersion(tx, entry, appVerId);
        if (!settled.keep) {
          // The version was decrypted meanwhile by another request (perhaps another country's):
          // this copy is not needed, and the request ends Done as that version for its country.
          await q.deleteEntry(tx, entry.seq);
          await publishEntry(bus, { ...settled.entry, country: entry.country }, tx, {
            previousAppVerId: entry.appVerId,
          });
          // Its requester's daily count went on work the version did not need.
          if (entry.requestedBy !== null)
            await deps.usage?.giveBack(entry.requestedBy, entry.requestedAt, tx);
          return settled;
        }
        const row = await q.markEntryDone(tx, entry.seq, {
          appVerId,
          version: verdict.version,
          minimumOs: verdict.report.minimumOsVersion,
          sizeBytes: file.sizeBytes,
          fileKey,
          now: now(),
        });
        await publishEntry(bus, row, tx, { previousAppVerId: entry.appVerId });
        return { entry: row, keep: true as const };
      });
    } catch (err) {
      await files.delete(fileKey).catch(() => {});
      throw err;
    }
    if (!done.keep) await files.delete(fileKey);
    else {
      const work = afterDone(done.entry.appId, appVerId, fileKey);
      if (options.afterDone === 'await') await work;
    }
    return {
      status: 'Done' as const,
      app_ver_id: String(done.entry.appVerId ?? appVerId),
      version: done.entry.version ?? verdict.version,
      size_bytes: done.entry.sizeBytes ?? file.sizeBytes,
    };
  }

  /**
   * The entry an imported version settles: its own (refused when already Done), else the app's
   * waiting app-level request when the store's current version is this one, else a new entry.
   */
  async function entryToImportInto(
    tx: Database,
    app: { country: string; appId: number; version: string },
    appVerId: number,
    version: string,
  ) {
    const own = await q.findByAppVerId(tx, app.appId, appVerId);
    if (own?.status === 'Done') throw fail('ALREADY_DECRYPTED');
    if (own) return own;
    const waiting = await q.findActiveAppLevel(tx, app.country, app.appId);
    if (waiting && app.version === version) return waiting;
    return q.insertEntry(tx, {
      country: app.country,
      appId: app.appId,
      appVerId,
      version,
      status: 'Pending',
      premium: false,
      requestedBy: null,
      now: now(),
    });
  }

  return {
    /** Waits for the work started after versions became Done (the server waits for it as it closes). */
    async settle() {
      while (afterDoneWork.size > 0) await Promise.all([...afterDoneWork]);
    },

    /**
     * Receives a decrypted IPA (streamed to disk, capped), checks it with packages/ipa and stores
     * it; the entry becomes Done. A refused file stores nothing, records the reason and counts as
     * a failed attempt (422 with the reason).
     */
    async acceptUpload(
      agent: AgentRef,
      lease: string,
      body: Readable,
      info: UploadQuery & { declaredBytes?: number },
    ): Promise<UploadAnswer> {
      const { jobId, attempt } = parseLeaseId(lease);
      const job = await q.findJob(db, jobId);
      if (!job || job.agentId !== agent.id || job.attempts !== attempt || job.state !== 'leased') {
        body.resume();
        throw leaseEnded(job, agent, attempt);
      }
      if (job.kind !== 'decrypt' || job.versionSeq === null) {
        body.resume();
        throw fail('JOB_TAKES_NO_IPA');
      }
      // A full disk refuses the upload before a byte is written (503: the agent keeps its lease
      // and sends it again later; the attempt is not counted). An IPA of unknown length needs room
      // for the largest accepted; on local storage, room for its stored copy too.
      const uploadBytes = info.declaredBytes ?? settings.maxIpaBytes;
      try {
        await deps.disk?.ensureRoom(files.kind === 'local' ? uploadBytes * 2 : uploadBytes);
      } catch (err) {
        body.resume();
        throw err;
      }
      const received = await receiveToFile(body, {
        dir: settings.tmpDir,
        maxBytes: settings.maxIpaBytes,
        ...(info.declaredBytes !== undefined ? { declaredBytes: info.declaredBytes } : {}),
      });
      try {
        const refuse = async (reason: string): Promise<never> => {
          await withHeldJob(agent, lease, (tx, held) => endAttempt(tx, held, { kind: 'failed', reason }));
          metrics.job('decrypt', 'failed');
          throw fail('RESULT_REFUSED', reason);
        };
        const entry = await q.findEntry(db, job.versionSeq);
        if (!entry) throw leaseLost();
        await withHeldJob(agent, lease, async (tx) => {
          const checking = await q.updateEntry(tx, entry.seq, { status: 'Process', updatedAt: now() });
          if (checking) await publishEntry(bus, checking, tx);
        });
        const app = await catalog.lookupApp(entry.country, entry.appId);
        const reported =
          info.app_ver_id ?? (job.reportedAppVerId === null ? undefined : String(job.reportedAppVerId));
        const reportedVersion = info.version ?? job.reportedVersion ?? undefined;
        const verdict = await verifyDecrypted(received.path, {
          bundleId: app.bundleId,
          appId: String(entry.appId),
          ...expectedVersion(entry, { appVerId: reported, version: reportedVersion }),
        });
        if (!verdict.ok) return await refuse(verdict.reason);
        if (entry.appVerId !== null && reported !== undefined && reported !== String(entry.appVerId)) {
          return await refuse(
            `The agent uploaded store version ${reported}, not the requested ${entry.appVerId}.`,
          );
        }
        const appVerIdText =
          entry.appVerId !== null ? String(entry.appVerId) : (reported ?? verdict.metadata?.appVerId);
        if (appVerIdText === undefined) {
          return await refuse(
            'The agent did not say which store version it uploaded (app_ver_id), and the IPA has no iTunesMetadata.plist naming it.',
          );
        }
        const stored = await storeResult({
          file: received,
          verdict,
          appId: entry.appId,
          appVerId: Number(appVerIdText),
          // The agent hears its upload is Done at once: the heartbeats it sends meanwhile must not
          // find the job finished long before the answer arrives (they would read as a lost lease).
          afterDone: 'background',
          hold: (work) =>
            withHeldJob(agent, lease, async (tx, held) => {
              const settled = await work(tx, entry);
              // A result that gave way to an existing Done version leaves no entry, and so no job.
              if (settled.keep)
                await q.setJobState(tx, held.id, 'done', {
                  leaseExpiresAt: null,
                  lastReason: null,
                  updatedAt: now(),
                });
              if (held.agentId !== null) await q.countAgentOutcome(tx, held.agentId, 'done');
              return settled;
            }),
        });
        log.info(
          { appId: entry.appId, appVerId: stored.app_ver_id, agent: agent.name },
          'decrypted version accepted',
        );
        metrics.job('decrypt', 'done');
        metrics.decryptDuration(
          job.priority > 0 ? 'premium' : 'free',
          (now().getTime() - job.createdAt.getTime()) / 1000,
        );
        return {
          status: 'Done',
          app_ver_id: stored.app_ver_id,
          version: stored.version,
          size_bytes: stored.size_bytes,
        };
      } finally {
        await rm(received.path, { force: true });
      }
    },

    /**
     * An operator's own decrypted IPA (`sideport ipa:import`), through the same check and storage
     * as an agent's upload: the app is the store's app of the IPA's bundle id (or `appId`, which
     * must match), the version id the IPA's iTunesMetadata.plist names (or `appVerId`). The
     * version becomes Done; a waiting request for it is answered. The source file is left alone.
     */
    async importIpa(
      source: string,
      target: { country: string; appId?: number; appVerId?: number },
    ): Promise<ImportAnswer> {
      await mkdir(settings.tmpDir, { recursive: true });
      const copy = path.join(settings.tmpDir, `import-${randomUUID()}.ipa`);
      try {
        // A copy, because storing moves the file, and the operator's own file must stay.
        await copyFile(source, copy);
        const sizeBytes = (await stat(copy)).size;
        if (sizeBytes > settings.maxIpaBytes) throw uploadTooLarge(settings.maxIpaBytes);
        const known =
          target.appId === undefined ? undefined : await catalog.lookupApp(target.country, target.appId);
        const verdict = await verifyDecrypted(copy, {
          ...(known ? { bundleId: known.bundleId, appId: String(known.appId) } : {}),
          ...(target.appVerId !== undefined ? { appVerId: String(target.appVerId) } : {}),
        });
        if (!verdict.ok) throw fail('RESULT_REFUSED', verdict.reason);
        const app = known ?? (await catalog.lookupAppByBundleId(target.country, verdict.report.bundleId));
        const appVerIdText =
          target.appVerId !== undefined ? String(target.appVerId) : verdict.metadata?.appVerId;
        if (appVerIdText === undefined) {
          throw fail('RESULT_VERSION_MISSING');
        }
        const appVerId = Number(appVerIdText);
        // A request waiting for this very version knows its version string: the IPA must be it.
        const waiting = await q.findByAppVerId(db, app.appId, appVerId);
        const otherVersion =
          waiting && waiting.status !== 'Done'
            ? findContradiction(verdict, expectedVersion(waiting, {}))
            : undefined;
        if (otherVersion) throw fail('RESULT_REFUSED', otherVersion);
        const stored = await storeResult({
          file: { path: copy, sizeBytes },
          verdict,
          appId: app.appId,
          appVerId,
          // An operator's command: the digest cache is ready when it returns.
          afterDone: 'await',
          hold: (work) =>
            db.transaction(async (tx) => {
              const entry = await entryToImportInto(tx, app, appVerId, verdict.version);
              const settled = await work(tx, entry);
              const job = settled.keep ? await q.jobOfEntry(tx, entry.seq) : undefined;
              // A job still queued or leased for it is finished: its agent's next call is told so.
              if (job)
                await q.setJobState(tx, job.id, 'done', {
                  agentId: null,
                  leaseExpiresAt: null,
                  lastReason: null,
                  updatedAt: now(),
                });
              return settled;
            }),
        });
        log.info({ appId: app.appId, appVerId }, 'decrypted version imported');
        return { country: app.country, app_id: String(app.appId), name: app.name, ...stored };
      } finally {
        await rm(copy, { force: true });
      }
    },
  };
}
