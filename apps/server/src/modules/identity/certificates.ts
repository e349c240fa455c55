/**
 * The certificates an identity has signed with and their revocation status (docs/sign-service.md,
 * Install preflight): each is remembered when it first signs, and its status is asked of its
 * issuer's OCSP responder (ocsp.ts) at most once per cache period, whatever the number of
 * processes: the answer is kept in the database until its nextUpdate, capped by
 * OCSP_CACHE_MINUTES. A revocation is for good: a revoked certificate is never asked about again.
 */
import { X509Certificate } from 'node:crypto';
import type { Database } from '../../db/client.js';
import type { OcspStatus } from '../../db/schema/index.js';
import { askResponder, issuerUrl, OcspError, responderUrl } from './ocsp.js';
import type { FaultTracker } from '../../platform/faults.js';
import * as q from './queries.js';
import type { CurrentCertificate } from './ports.js';

/** What the admin console and a preflight see: the responder's word, or 'not checked' when none was had. */
export type CertificateState = OcspStatus | 'not checked';

export interface CertificateStatus {
  state: CertificateState;
  /** When the issuer revoked it (revoked only). */
  revokedAt: Date | null;
  /** When a responder last answered about it; null: never. */
  checkedAt: Date | null;
  /** Why the last attempt to ask failed, when it did. */
  error: string | null;
  /** The identity that signed with it. */
  identityKind: 'dev' | 'apple' | null;
}

export interface CertificateRegistrySettings {
  /** OCSP_URL: asked instead of each certificate's own responder (tests, air-gapped operators). */
  ocspUrl?: string | undefined;
  /** OCSP_CACHE_MINUTES: an answer is used at most this long (less when its nextUpdate is sooner); 0: ask every time. */
  cacheMinutes: number;
  /** How long one question to a responder or an issuer's address may take. */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 5000;
/** After a failed question, the next waits this long at most (a responder that is down is not asked per install). */
const RETRY_AFTER_FAILURE_MS = 60_000;

const notChecked = (
  identityKind: CertificateStatus['identityKind'] = null,
  error: string | null = null,
): CertificateStatus => ({
  state: 'not checked',
  revokedAt: null,
  checkedAt: null,
  error,
  identityKind,
});

export function createCertificateRegistry(deps: {
  db: Database;
  clock: () => Date;
  settings: CertificateRegistrySettings;
  log: { warn(obj: object, msg: string): void };
  /**
   * Told when the responder fails and when it answers again. A responder that is down blocks
   * nothing: the last answer stands (iOS itself treats an unreachable responder as good) and the
   * question is asked again after a short wait.
   */
  faults?: Pick<FaultTracker, 'fault' | 'ok'>;
}) {
  const { db, clock, settings, log, faults } = deps;
  const timeoutMs = settings.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const cacheMs = settings.cacheMinutes * 60_000;
  // One question per certificate at a time in this process: a burst of installs asks once.
  const asking = new Map<string, Promise<CertificateStatus>>();
  // Certificates this process stored already: each sign need not write it again.
  const remembered = new Set<string>();

  const statusOf = (row: q.SigningCertificateRow): CertificateStatus =>
    row.ocspStatus === null
      ? notChecked(row.identityKind, row.ocspError)
      : {
          state: row.ocspStatus,
          revokedAt: row.revokedAt,
          checkedAt: row.checkedAt,
          error: row.ocspError,
          identityKind: row.identityKind,
        };

  /** The issuer's certificate from the address the certificate names (Apple's WWDR intermediates are there). */
  async function fetchIssuer(certPem: string): Promise<string | undefined> {
    const url = issuerUrl(certPem);
    if (!url) return undefined;
    const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    if (!response.ok)
      throw new OcspError(`The issuer certificate at ${url} could not be fetched (HTTP ${response.status}).`);
    const body = Buffer.from(await response.arrayBuffer());
    const issuer = new X509Certificate(
      body.subarray(0, 10).toString('latin1').startsWith('-----') ? body.toString('utf8') : body,
    );
    const cert = new X509Certificate(certPem);
    if (!cert.checkIssued(issuer) || !cert.verify(issuer.publicKey))
      throw new OcspError(`The certificate at ${url} did not issue this one.`);
    return issuer.toString();
  }

  async function ask(row: q.SigningCertificateRow): Promise<CertificateStatus> {
    const url = settings.ocspUrl ?? responderUrl(row.certPem);
    // No responder to ask: nothing to learn, nothing to store.
    if (!url) return statusOf(row);
    const now = clock();
    try {
      const issuerPem = row.issuerPem ?? (await fetchIssuer(row.certPem));
      if (!issuerPem) throw new OcspError('The certificate names no issuer to check it against.');
      if (row.issuerPem === null) await q.setCertificateIssuer(db, row.fingerprint, issuerPem);
      const answer = await askResponder({ url, certPem: row.certPem, issuerPem, now, timeoutMs });
      const nextCheckAt = new Date(
        Math.min(now.getTime() + cacheMs, answer.nextUpdate?.getTime() ?? Number.POSITIVE_INFINITY),
      );
      const saved = await q.saveOcspAnswer(db, row.fingerprint, {
        ocspStatus: answer.status,
        revokedAt: answer.status === 'revoked' ? (answer.revokedAt ?? now) : null,
        checkedAt: now,
        nextCheckAt,
        ocspError: null,
      });
      faults?.ok('ocsp');
      return statusOf(saved ?? row);
    } catch (err) {
      const message =
        err instanceof OcspError ? err.message : `The OCSP check failed: ${(err as Error).message}`;
      log.warn({ err, fingerprint: row.fingerprint }, 'OCSP check failed');
      faults?.fault('ocsp', err);
      const saved = await q.saveOcspAnswer(db, row.fingerprint, {
        ocspError: message,
        nextCheckAt: new Date(now.getTime() + Math.min(cacheMs, RETRY_AFTER_FAILURE_MS)),
      });
      return statusOf(saved ?? row);
    }
  }

  return {
    /** Records a certificate the identity signs with (once; later calls change nothing). */
    async remember(certificate: CurrentCertificate, identityKind: 'dev' | 'apple') {
      if (remembered.has(certificate.fingerprint)) return;
      await q.insertSigningCertificate(db, {
        fingerprint: certificate.fingerprint,
        identityKind,
        certPem: certificate.pem,
        issuerPem: certificate.issuerPem ?? null,
        serial: certificate.serial,
        notBefore: certificate.notBefore,
        notAfter: certificate.notAfter,
        firstUsedAt: clock(),
      });
      remembered.add(certificate.fingerprint);
    },

    /** Its status, asking its responder when the kept answer is older than the cache allows. */
    async status(fingerprint: string): Promise<CertificateStatus> {
      const row = await q.findSigningCertificate(db, fingerprint);
      if (!row) return notChecked();
      if (row.ocspStatus === 'revoked') return statusOf(row);
      if (row.nextCheckAt !== null && row.nextCheckAt.getTime() > clock().getTime()) return statusOf(row);
      let pending = asking.get(fingerprint);
      if (!pending) {
        pending = ask(row).finally(() => asking.delete(fingerprint));
        asking.set(fingerprint, pending);
      }
      return pending;
    },

    /** The kept answer only: never asks (the admin console). */
    async cachedStatus(fingerprint: string): Promise<CertificateStatus> {
      const row = await q.findSigningCertificate(db, fingerprint);
      return row ? statusOf(row) : notChecked();
    },

    /** Recovery made another in its place. */
    markReplaced: (fingerprint: string, reason: string) =>
      q.markCertificateReplaced(db, fingerprint, clock(), reason),
  };
}

export type CertificateRegistry = ReturnType<typeof createCertificateRegistry>;
