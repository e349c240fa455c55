import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdir, rm, stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { DylibKind } from '@sideport/ipa';
import type { Database } from '../../db/client.js';
import { waitForEvent, type EventBus } from '../../platform/events.js';
import { faultPartOf, isDatabaseFault, isDependencyFault } from '../../platform/faults.js';
import { endOfAttempt } from '../../platform/lease-queue.js';
import type { DiskGuard } from '../../platform/disk-space.js';
import { isDeviceWaitingForApple } from '../devices/apple-wait.js';
import type { FileStore } from '../../platform/storage.js';
import type { SigningService } from '../identity/signing.js';
import type { CopyAppIds } from '../versions/capabilities/copy-app-ids.js';
import { noMetrics, type ServiceMetrics } from '../metrics/registry.js';
import * as q from './queries.js';
import type { Recovery } from './recovery.js';
import type { RunnerIdentity, RunnerTask } from './runner-protocol.js';
import { TaskAborted, type RunTask } from './run-task.js';
import { fileTag } from './file-tag.js';
import type { SignCache } from './sign-cache.js';
import { publishSign } from './sign-events.js';

export interface SignWorkerSettings {
  leaseSeconds: number;
  /** Failed signs before one is given up. */
  maxAttempts: number;
  /** Leases lost to workers that died before a sign is given up (counted apart from failures). */
  maxLostLeases: number;
  /** Where artifacts are written before they are stored. */
  tmpDir: string;
  /** SIGN_DYLIBS_IAP and SIGN_DYLIBS_IGG: absolute paths; the mode picks which the signing process reads. */
  dylibs: Record<DylibKind, readonly string[]>;
  /** FEATHER_IPA, when this machine has it. */
  featherIpa?: string | undefined;
  /** How often an idle worker looks for work nobody announced (a lease that ran out). */
  pollMs?: number;
}

export interface SignWorkerDeps {
  db: Database;
  clock: () => Date;
  bus: EventBus;
  files: FileStore;
  signing: Pick<SigningService, 'signingMaterial'>;
  /** Replaces a revoked certificate before it signs anything more. */
  recovery?: Pick<Recovery, 'ensureSignable'>;
  cache: SignCache;
  run: RunTask;
  settings: SignWorkerSettings;
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
  metrics?: ServiceMetrics;
  /** The data disk's free space: a sign that would fill it waits, its attempt not counted. */
  disk?: Pick<DiskGuard, 'ensureRoom'>;
  /** The explicit App ID a DUP copy is signed for, when the operator has them made (versions/capabilities/copy-app-ids.ts). */
  copyAppIds?: Pick<CopyAppIds, 'forSign'>;
}

const REASON_LEASE_EXPIRED = 'The sign worker stopped before it finished.';
const REASON_NO_DEVICE = 'You have no Registered device to sign for.';
const REASON_NO_FEATHER = 'This worker has no Feather IPA (FEATHER_IPA).';
/** A sign that runs longer than this is stuck: its process is ended and the attempt fails. */
const MAX_SIGN_MS = 60 * 60_000;

/**
 * DUP's new bundle id segment, `<app's id>.<this>`: the same for a user and an app every time,
 * different between users. Every task carries it; packages/ipa's sign() uses it when the mode
 * renames bundle ids (it alone reads what a mode does).
 */
export const dupSuffix = (userId: string, appId: number) =>
  `dup${createHash('sha256').update(`sideport-dup\0${userId}\0${appId}`).digest('hex').slice(0, 10)}`;

const toRunnerIdentity = (
  identity: Awaited<ReturnType<SigningService['signingMaterial']>> & object,
): RunnerIdentity => {
  const source = identity.identity;
  return {
    ...('p12' in source
      ? { p12: source.p12, password: source.password }
      : { certPem: source.certPem, keyPem: source.keyPem }),
    ...(source.chain ? { chain: [...source.chain] } : {}),
  };
};

/**
 * Sign workers: each slot claims one sign at a time under a lease it renews while a signing
 * process works, stores the artifact under a new key and commits the row only while it still holds
 * the lease (a worker that died or lost its lease commits nothing; its job is claimed again when
 * the lease runs out). Runs inside an API process (SIGN_WORKERS) and in `sideport worker`.
 */
export function createSignWorkers(deps: SignWorkerDeps) {
  const { db, clock, bus, files, signing, recovery, cache, run, settings, log, metrics = noMetrics } = deps;
  const processTag = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  const pollMs = settings.pollMs ?? Math.min(5000, (settings.leaseSeconds * 1000) / 2);
  /** How long a slot waits after a part it needs failed, before it claims again. */
  const faultBackoffMs = Math.min(5000, pollMs);
  let stopping = false;
  const stopped = new AbortController();
  const whenStopped = new Promise<void>((resolve) =>
    stopped.signal.addEventListener('abort', () => resolve(), { once: true }),
  );
  const running = new Set<Promise<void>>();

  const limits = { maxFailures: settings.maxAttempts, maxLostLeases: settings.maxLostLeases };

  /**
   * The attempt failed (`final`: it cannot succeed, whatever the count): back to the queue, or
   * given up after SIGN_MAX_ATTEMPTS failures (counted apart from lost leases: a worker killed
   * mid-sign). Nothing when the lease was lost meanwhile.
   */
  async function endAttempt(lease: q.Lease, reason: string, final = false) {
    await db.transaction(async (tx) => {
      const row = await q.lockHeld(tx, lease);
      if (!row) return;
      const outcome = endOfAttempt(row, { kind: 'failed', reason, final }, limits);
      await publishSign(bus, await q.endAttempt(tx, row.id, outcome, clock()), tx);
    });
    metrics.job('sign', 'failed');
  }

  /**
   * Hands a lease back, the attempt not counted; while the database does not answer it tries
   * again until the lease would have run out anyway (then the claim counts a lost lease, never a failure).
   */
  async function releaseSoon(lease: q.Lease) {
    const giveUpAt = Date.now() + settings.leaseSeconds * 1000;
    for (;;) {
      try {
        const row = await q.releaseLease(db, lease, clock());
        if (row) await publishSign(bus, row);
        return;
      } catch (err) {
        if (!isDatabaseFault(err) || Date.now() > giveUpAt || stopping) return;
        await Promise.race([sleep(Math.min(1000, pollMs)), whenStopped]);
      }
    }
  }

  /** The file to sign, as a local path for the task. */
  async function sourceOf(row: q.SignRow) {
    if (row.source === 'feather') {
      if (!settings.featherIpa) return undefined;
      const tag = await fileTag(settings.featherIpa);
      return { path: settings.featherIpa, tag, refresh: async () => {}, release: async () => {} };
    }
    return { ...(await cache.localSource(row.sourceKey!)), tag: null };
  }

  async function signOne(row: q.SignRow, worker: string) {
    const lease: q.Lease = { id: row.id, worker, attempt: row.attempts };
    await publishSign(bus, row);
    const abort = new AbortController();
    let source: Awaited<ReturnType<typeof sourceOf>>;
    const renew = setInterval(
      () => {
        // A source copied from S3 stays fresh while it is signed: the file sweep removes only old ones.
        void source?.refresh();
        q.renewLease(db, lease, clock(), settings.leaseSeconds)
          .then((held) => {
            if (held) return;
            metrics.job('sign', 'lease_expired');
            abort.abort();
          })
          .catch((err: unknown) => log.warn({ err, sign: row.id }, 'could not renew a sign lease'));
      },
      (settings.leaseSeconds * 1000) / 3,
    );
    const stuck = setTimeout(() => abort.abort(), MAX_SIGN_MS);
    const output = path.join(settings.tmpDir, `signed-${randomUUID()}.ipa`);
    const started = Date.now();
    try {
      await recovery?.ensureSignable();
      const copyAppId =
        row.source === 'version'
          ? await deps.copyAppIds?.forSign({ ...row, dupSuffix: dupSuffix(row.userId, row.appId) })
          : undefined;
      const material = await signing.signingMaterial(row.userId, copyAppId);
      if (!material) return await endAttempt(lease, REASON_NO_DEVICE, true);
      // The devices the artifact is for are those of this moment: one registered later is not in it.
      const signedAt = clock();
      source = await sourceOf(row);
      if (!source) return await endAttempt(lease, REASON_NO_FEATHER, true);
      const cacheDir =
        row.source === 'version'
          ? await cache.versionCache(row.appId, row.appVerId)
          : { dir: cache.featherDir, wasEmpty: false };
      await mkdir(settings.tmpDir, { recursive: true });
      // The signed copy is about the size of its source: refused before it is written when the
      // disk has no room (the sign goes back to the queue uncounted; the slot waits).
      await deps.disk?.ensureRoom((await stat(source.path)).size);
      log.info(
        { sign: row.id, worker, attempt: row.attempts, mode: row.signType },
        `sign ${row.id}: signing`,
      );
      const task: RunnerTask = {
        kind: 'sign',
        input: source.path,
        output,
        identity: toRunnerIdentity(material),
        profile: material.profile,
        mode: row.signType,
        dylibs: settings.dylibs,
        dupSuffix: dupSuffix(row.userId, row.appId),
        cacheDir: cacheDir.dir,
      };
      const result = await run(task, AbortSignal.any([abort.signal, stopped.signal]));
      if (!result.ok) return await endAttempt(lease, result.message, result.code !== undefined);
      if (result.kind !== 'sign') throw new Error('The signing process answered another task.');
      const sizeBytes = (await stat(output)).size;
      const artifactId = randomUUID();
      const fileKey = `signed/${row.id}/${artifactId}.ipa`;
      // Stored before the row names it, under a key nothing else uses: nobody is served half a file.
      await files.putFile(fileKey, output);
      const committed = await db.transaction(async (tx) => {
        const done = await q.commitArtifact(tx, lease, {
          artifactId,
          fileKey,
          signedAt,
          udids: material.udids,
          bundleId: result.bundleId,
          bundleVersion: result.bundleVersion,
          sizeBytes,
          sourceTag: source!.tag,
          updatedAt: clock(),
          // What an install preflight checks, so it reads no IPA.
          certFingerprint: material.certificate.fingerprint,
          certNotBefore: material.certificate.notBefore,
          certNotAfter: material.certificate.notAfter,
          profileUuid: material.profileUuid,
          profileExpiresAt: material.profileExpiresAt,
          profileCertificates: material.profileCertificates,
        });
        if (done) await publishSign(bus, done.row, tx);
        return done;
      });
      if (!committed) {
        if (!abort.signal.aborted) metrics.job('sign', 'lease_expired');
        await files.delete(fileKey);
        log.info({ sign: row.id, worker }, `sign ${row.id}: lease lost; artifact dropped`);
        return;
      }
      if (committed.previousKey) await files.delete(committed.previousKey).catch(() => {});
      if (row.source === 'version' && cacheDir.wasEmpty) await cache.afterColdSign(row.appId, row.appVerId);
      log.info({ sign: row.id, worker, ms: Date.now() - started, sizeBytes }, `sign ${row.id}: signed`);
      metrics.job('sign', 'done');
      metrics.signDuration(row.signType, (Date.now() - started) / 1000);
    } catch (err) {
      if (err instanceof TaskAborted) {
        // Stopping: the job goes back at once. A lost lease: someone else has it, nothing to do.
        if (stopped.signal.aborted)
          await q.releaseLease(db, lease, clock()).then((r) => r && publishSign(bus, r));
        log.info({ sign: row.id, worker }, `sign ${row.id}: stopped`);
        return;
      }
      if (isDeviceWaitingForApple(err)) {
        // A device of the user waits for Apple to list it: the sign was not tried, so it goes back
        // to the queue uncounted, and claims pass it by until the device is Registered again.
        log.info(
          { sign: row.id, worker, udids: err.udids },
          `sign ${row.id}: waits for Apple to list a device`,
        );
        await releaseSoon(lease);
        return;
      }
      if (isDependencyFault(err)) {
        // A part the sign needs is down (the database, the file store, a full disk): the sign did
        // not fail. It goes back to the queue with this attempt not counted, and the slot waits.
        log.warn({ err, sign: row.id, worker }, `sign ${row.id}: put back until ${faultPartOf(err)} answers`);
        await releaseSoon(lease);
        throw err;
      }
      // Recorded (and counted on /metrics) first: the log line says what is already so.
      await endAttempt(lease, 'The sign failed on the server. Please retry later.').catch((e: unknown) =>
        log.warn({ err: e, sign: row.id }, 'could not record a failed sign'),
      );
      log.warn({ err, sign: row.id, worker }, `sign ${row.id}: failed`);
    } finally {
      clearInterval(renew);
      clearTimeout(stuck);
      await rm(output, { force: true });
      await source?.release();
    }
  }

  async function slot(worker: string) {
    while (!stopping) {
      // Listen before looking, so a sign queued between the look and the wait is not missed.
      const queued = waitForEvent(bus, (e) => e.kind === 'sign-queued', pollMs);
      let row: q.SignRow | undefined;
      try {
        row = await q.claimNextSign(db, {
          worker,
          now: clock(),
          leaseSeconds: settings.leaseSeconds,
          maxLostLeases: settings.maxLostLeases,
          lostReason: REASON_LEASE_EXPIRED,
        });
      } catch (err) {
        log.warn({ err, worker }, 'sign claim failed');
        if (isDependencyFault(err)) await Promise.race([sleep(faultBackoffMs), whenStopped]);
      }
      if (row) {
        metrics.job('sign', 'claimed');
        void queued.catch(() => {});
        // A failure outside the sign (the database gone a moment) loses this lease, not the slot;
        // a part that is down makes the slot wait before it claims again.
        const isFault = await signOne(row, worker).then(
          () => false,
          (err: unknown) => {
            if (isDependencyFault(err)) return true;
            log.warn({ err, sign: row.id, worker }, `sign ${row.id}: failed`);
            return false;
          },
        );
        if (isFault) await Promise.race([sleep(faultBackoffMs), whenStopped]);
        continue;
      }
      await Promise.race([queued, whenStopped]);
    }
  }

  /** Gives up signs whose lease ran out for the last time they may (the claim takes the others back). */
  async function sweep() {
    const given = await db.transaction(async (tx) => {
      const now = clock();
      const expired = await q.lockLastExpired(tx, now, settings.maxLostLeases, 100);
      const ended: q.SignRow[] = [];
      for (const row of expired) {
        const outcome = endOfAttempt(row, { kind: 'lost', reason: REASON_LEASE_EXPIRED }, limits);
        ended.push(await q.endAttempt(tx, row.id, outcome, now));
      }
      return ended;
    });
    if (given.length) metrics.job('sign', 'lease_expired', given.length);
    for (const row of given) await publishSign(bus, row);
    return given.length;
  }

  return {
    sweep,

    /** Starts `count` slots in this process. */
    start(count: number) {
      for (let i = 0; i < count; i++) {
        const loop = slot(`${processTag}:${i + 1}`).catch((err: unknown) =>
          log.warn({ err }, 'a sign worker stopped after an error'),
        );
        running.add(loop);
        void loop.finally(() => running.delete(loop));
      }
    },

    /** Stops claiming; signs under way are ended and go back to the queue at once. */
    async stop() {
      stopping = true;
      stopped.abort();
      await Promise.all(running);
    },
  };
}

export type SignWorkers = ReturnType<typeof createSignWorkers>;
