/**
 * Revocation and expiry recovery (docs/sign-service.md): a pass, run every RECOVERY_CHECK_MINUTES
 * in the API processes and `sideport worker`, and whenever a preflight notices a revoked or
 * soon-expiring certificate or profile. Without an admin, it
 *   1. has the identity make a new certificate when the current one is revoked or expires within
 *      RENEW_BEFORE_DAYS (the identity does so under a database lock: one certificate, however
 *      many processes notice),
 *   2. makes again every profile that names another certificate or is about to expire,
 *   3. re-signs in the background every artifact signed with another certificate, and every one
 *      whose profile expires within RENEW_BEFORE_DAYS (resign.ts),
 * and writes each step in the audit log as 'system (recovery)'. One process at a time runs a pass;
 * a sign worker about to sign with a revoked certificate waits for one (ensureSignable).
 */
import type { Database } from '../../db/client.js';
import type { CurrentCertificate } from '../identity/ports.js';
import type { Signer, SigningService } from '../identity/signing.js';
import * as q from './queries.js';
import { RECOVERY_ACTOR, type ResignService } from './resign.js';

const DAY_MS = 86_400_000;
/** A preflight that sees something about to expire asks for a pass at most this often per process. */
const NOTICE_INTERVAL_MS = 60_000;

export interface RecoveryReport {
  /** The certificate was replaced in this pass. */
  replaced: boolean;
  /** Re-signs queued. */
  queued: number;
  /** Profiles made again. */
  profiles: number;
}

export interface RecoveryDeps {
  db: Database;
  databaseKind: 'pglite' | 'postgres';
  clock: () => Date;
  signing: Pick<SigningService, 'signers' | 'certificateStatus' | 'refreshProfiles'>;
  resign: Pick<ResignService, 'resignArtifacts'>;
  audit: (actor: string, action: string, subject: object) => Promise<void>;
  /** RENEW_BEFORE_DAYS. */
  renewBeforeMs: number;
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
}

const day = (date: Date | null) => (date ?? new Date()).toISOString().slice(0, 10);

export function createRecovery(deps: RecoveryDeps) {
  const { db, clock, signing, resign, renewBeforeMs, log } = deps;
  const audit = (action: string, subject: object) => deps.audit(RECOVERY_ACTOR, action, subject);
  let running: Promise<RecoveryReport | undefined> | undefined;
  let isClosed = false;
  // A revocation noticed while a pass runs gets a pass of its own after it (that one may have asked too early).
  let runAgain = false;
  let lastNoticeAt = Number.NEGATIVE_INFINITY;

  async function pass(trigger: string): Promise<RecoveryReport> {
    const report: RecoveryReport = { replaced: false, queued: 0, profiles: 0 };
    const inUse = await q.artifactCertificates(db);
    // Nothing signed yet: nothing to recover, and no certificate is made for it.
    if (inUse.fingerprints.length === 0 && !inUse.untracked) return report;

    // Each identity that signs (the dev identity, or each developer account) is checked on its own.
    const now = clock();
    const replacedSerials: string[] = [];
    const currents: CurrentCertificate[] = [];
    for (const signer of await signing.signers()) {
      currents.push(await checkSigner(signer, trigger, now, report, replacedSerials));
    }

    // The profiles first, so that the re-signs find them made.
    report.profiles = await signing.refreshProfiles((userId, err) =>
      log.warn({ err, userId }, `recovery: ${userId}'s profile could not be made again`),
    );
    if (report.profiles > 0)
      await audit('profiles-made-again', {
        profiles: report.profiles,
        serial: currents.map((c) => c.serial).join(', '),
      });

    const stillSigning = new Set(currents.map((c) => c.fingerprint));
    const others = inUse.fingerprints.filter((fingerprint) => !stillSigning.has(fingerprint));
    if (others.length > 0 || (report.replaced && inUse.untracked)) {
      const done = await resign.resignArtifacts({
        certificateFingerprints: others,
        includeUntracked: report.replaced,
        reason: `Signed with a certificate that no longer signs${replacedSerials.length ? ` (serial ${replacedSerials.join(', ')})` : ''}.`,
      });
      report.queued += done.queued;
    }
    // Profiles close to their end, where a new one would last longer (not capped by the certificate).
    for (const current of currents) {
      const renewBefore = Math.min(now.getTime() + renewBeforeMs, current.notAfter.getTime() - DAY_MS);
      const renewed = await resign.resignArtifacts({
        certificateFingerprints: [current.fingerprint],
        profileExpiringBefore: new Date(renewBefore),
        reason: 'Its provisioning profile expires within RENEW_BEFORE_DAYS.',
      });
      report.queued += renewed.queued;
    }
    return report;
  }

  /**
   * One identity's certificate: replaced when it is revoked or expires within RENEW_BEFORE_DAYS
   * (the identity does so under a database lock); returns the certificate that signs after.
   */
  async function checkSigner(
    signer: Signer,
    trigger: string,
    now: Date,
    report: RecoveryReport,
    replacedSerials: string[],
  ): Promise<CurrentCertificate> {
    const current = await signer.currentCertificate();
    const status = await signing.certificateStatus(current.fingerprint);
    const isRevoked = status.state === 'revoked';
    if (!isRevoked && current.notAfter.getTime() - now.getTime() >= renewBeforeMs) return current;
    const why = isRevoked
      ? `it was revoked on ${day(status.revokedAt)}`
      : `it expires on ${day(current.notAfter)}`;
    const reason = `The signing certificate (serial ${current.serial}) is replaced: ${why}.`;
    await audit('certificate-replace', {
      serial: current.serial,
      fingerprint: current.fingerprint,
      reason,
      trigger,
    });
    try {
      const result = await signer.replaceCertificate(reason, { ifCurrent: current.fingerprint });
      if (result.replaced) {
        report.replaced = true;
        replacedSerials.push(current.serial);
        await audit('certificate-replaced', {
          old_serial: current.serial,
          serial: result.certificate.serial,
          not_after: result.certificate.notAfter.toISOString(),
          ...(result.note ? { note: result.note } : {}),
        });
        log.info(
          { old: current.serial, serial: result.certificate.serial },
          `recovery: ${reason} The new one is serial ${result.certificate.serial}.`,
        );
      }
      return result.certificate;
    } catch (err) {
      // Apple down or refusing: the artifacts of older certificates are still re-signed, and the next pass tries again.
      const message = err instanceof Error ? err.message : String(err);
      log.warn({ err }, `recovery: the certificate could not be replaced: ${message}`);
      await audit('certificate-replace-failed', { serial: current.serial, error: message });
      return current;
    }
  }

  /** One pass at a time in this process, and (PostgreSQL) in all of them: undefined when another holds it. */
  function run(trigger: string): Promise<RecoveryReport | undefined> {
    if (isClosed) return Promise.resolve(undefined);
    running ??= (
      deps.databaseKind === 'postgres' ? q.whileRecoveryLocked(db, () => pass(trigger)) : pass(trigger)
    ).finally(() => {
      running = undefined;
      if (runAgain) {
        runAgain = false;
        run(trigger).catch((err: unknown) => log.warn({ err }, 'recovery pass failed'));
      }
    });
    return running;
  }

  return {
    /** A recovery pass now (tests and the periodic check); undefined when another process is running one. */
    runPass: (trigger = 'check') => run(trigger),

    /**
     * A preflight saw a revoked or expired artifact (`urgent`), or one about to expire: a pass
     * runs in the background (at most once a minute for the latter).
     */
    notice(trigger: string, { urgent }: { urgent: boolean }) {
      const at = performance.now();
      if (!urgent && at - lastNoticeAt < NOTICE_INTERVAL_MS) return;
      lastNoticeAt = at;
      if (running && urgent) runAgain = true;
      run(trigger).catch((err: unknown) => log.warn({ err }, 'recovery pass failed'));
    },

    /**
     * Before a sign: when the certificate it would use is known revoked or has expired, a pass
     * replaces it first, so no new artifact is made with it.
     */
    async ensureSignable() {
      for (const signer of await signing.signers()) {
        const current = await signer.currentCertificate();
        const status = await signing.certificateStatus(current.fingerprint);
        if (status.state === 'revoked' || current.notAfter.getTime() <= clock().getTime()) {
          await run('sign');
          return;
        }
      }
    },

    /** No pass starts any more; resolves once the one under way ends (the process is stopping). */
    async close() {
      isClosed = true;
      await running?.catch(() => {});
    },

    /** Runs a pass now and every `intervalMs`; the returned function stops it (and waits for a pass under way). */
    start(intervalMs: number) {
      const tick = () =>
        void run('periodic check').catch((err: unknown) => log.warn({ err }, 'recovery pass failed'));
      tick();
      const timer = setInterval(tick, intervalMs);
      timer.unref();
      return async () => {
        clearInterval(timer);
        await running?.catch(() => {});
      };
    },
  };
}

export type Recovery = ReturnType<typeof createRecovery>;
