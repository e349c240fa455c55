import { randomInt } from 'node:crypto';
import {
  SIGN_TYPES,
  signModeOf,
  type FeatherCertAnswer,
  type SignAnswer,
  type SignCheckAnswer,
  type SignType,
} from '@sideport/contracts';
import type { DylibKind } from '@sideport/ipa';
import { isUniqueViolation, type Database } from '../../db/client.js';
import type { SignSource } from '../../db/schema/index.js';
import { fail, failWith } from '../../platform/errors.js';
import { waitForEvent, type EventBus } from '../../platform/events.js';
import type { SecretBox } from '../../platform/secrets.js';
import type { UrlSigner } from '../../platform/signed-urls.js';
import type { FileStore } from '../../platform/storage.js';
import type { TeamMoves } from '../identity/pool/team-moves.js';
import type { SigningService } from '../identity/signing.js';
import type { VersionReadModel } from '../versions/read-model.js';
import { featherCertZip } from './feather-cert.js';
import { installManifest } from './manifest.js';
import {
  expiresSoon,
  preflight,
  PROBLEM_CODES,
  problemSentence,
  recoveryCures,
  signingCures,
  type PreflightProblem,
} from './preflight.js';
import * as q from './queries.js';
import type { Recovery } from './recovery.js';
import type { SignCache } from './sign-cache.js';
import { publishSign } from './sign-events.js';
import { fileTag } from './file-tag.js';
import { canonicalUdid } from '../devices/udid.js';

export interface SignSettings {
  /** Lifetime of manifest, IPA and certificate URLs (DOWNLOAD_URL_TTL_SECONDS). */
  urlTtlSeconds: number;
  /** Which kinds of dylibs are configured: a mode that injects a kind not configured is not offered. */
  hasDylibs: Record<DylibKind, boolean>;
  /** FEATHER_IPA: Feather is offered only with it. */
  featherIpa?: string | undefined;
  /** How long GET /api/feather/install waits for a sign under way before asking to come back. */
  featherWaitMs: number;
  /** RENEW_BEFORE_DAYS: an install of an artifact that expires sooner asks recovery for a pass. */
  renewBeforeMs: number;
}

export interface SignServiceDeps {
  db: Database;
  clock: () => Date;
  bus: EventBus;
  files: FileStore;
  urls: UrlSigner;
  secrets: SecretBox;
  signing: Pick<
    SigningService,
    'signingMaterial' | 'featherMaterial' | 'registeredDevices' | 'certificateStatus' | 'waitsForApple'
  >;
  /** Told when a preflight finds an artifact revoked, expired or about to expire. */
  recovery: Pick<Recovery, 'notice'>;
  /** A Done version's stored file and the name its manifest shows. */
  versions: Pick<VersionReadModel, 'signable'>;
  /** With a pool of developer accounts: the user's moves to another team they were not told of yet. */
  teamMoves?: Pick<TeamMoves, 'pending' | 'acknowledge'> | undefined;
  settings: SignSettings;
}

const FEATHER_TITLE = 'Feather';
const FEATHER_CERT_PURPOSE = 'feather-cert';

const noDevice = () => fail('NO_DEVICE');
const notSigned = () => fail('NOT_SIGNED');
const featherNotOffered = () => fail('FEATHER_NOT_OFFERED');
const PASSWORD_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789';
/** The header a preflight's 409 carries when a new sign cures it: the web app offers 'Sign again'. */
export const REMEDY_HEADER = 'sideport-remedy';

/** Whether an artifact still serves every Registered device of its owner (check-sign's 200). */
/** The pool's reason for a move (written for the operator, identity/pool/registrar.ts) as the person reads it. */
function personReason(reason: string): string {
  if (/ is (disabled|rejected)$/.test(reason))
    return "the one that signed them before is no longer in this server's use";
  if (/no free .* slot/.test(reason))
    return 'the one that signed them before has no room for your new device';
  return 'your devices moved to it';
}

/** What a move to another team means for the apps installed before it, app by app. */
export function teamMoveWarning(reason: string, titles: readonly string[]): string {
  const head = `Your apps are now signed by another Apple developer team: ${personReason(reason)}.`;
  if (titles.length === 0)
    return `${head} Apps you install from now on do not see the saved logins and shared data of the apps you installed before.`;
  return [
    head,
    ...titles.map((title) => `After this update, ${title} will ask you to sign in again.`),
    'Saved logins and the data an app shares with its extensions stay with the old team.',
  ].join(' ');
}

export function isCurrent(
  row: q.SignRow,
  devices: Array<{ udid: string; registeredAt: Date | null }>,
): boolean {
  if (!row.fileKey || !row.signedAt) return false;
  const listed = new Set((row.udids ?? []).map(canonicalUdid));
  return devices.every(
    (d) => listed.has(canonicalUdid(d.udid)) && (d.registeredAt === null || d.registeredAt <= row.signedAt!),
  );
}

/**
 * The sign service as people use it (docs/product.md, Calls; docs/sign-service.md): sign requests, the
 * per-user sign statuses of the version list, check-sign, OTA install manifests and artifacts on
 * signed URLs, and Feather. Workers (worker.ts) do the signing.
 */
export function createSignService(deps: SignServiceDeps) {
  const { db, clock, bus, files, urls, secrets, signing, settings, recovery } = deps;

  /** What iOS would refuse about the artifact now (preflight.ts), or undefined. */
  const problemOf = (row: q.SignRow) => preflight(row, clock(), signing.certificateStatus);

  /**
   * The install preflight: a failed check is a 409 with the reason (and the Sideport-Remedy header
   * where a new sign cures it); recovery is told of what it cures, and of what expires soon.
   */
  async function preflightOrRefuse(row: q.SignRow) {
    const problem = await problemOf(row);
    if (!problem) {
      if (expiresSoon(row, clock(), settings.renewBeforeMs))
        recovery.notice('install preflight', { urgent: false });
      return;
    }
    // Recovery re-signs what it cures unless that failed before (the owner's own sign is needed then).
    const isTaken = recoveryCures(problem) && row.lastReason === null;
    if (row.state === 'idle' && isTaken) recovery.notice('install preflight', { urgent: true });
    throw refusal(problem, row.state !== 'idle' || isTaken);
  }

  const refusal = (problem: PreflightProblem, isBeingSigned: boolean) =>
    failWith(
      PROBLEM_CODES[problem.kind],
      signingCures(problem) ? { headers: { [REMEDY_HEADER]: 'sign-again' } } : {},
      problemSentence(problem, isBeingSigned),
    );

  /**
   * Before the first install of an app signed by the team a user moved to: a 409 that names each
   * app they installed before, which will ask them to sign in again (its keychain and shared data
   * stay with the old team). The web app asks them, then acknowledges and installs.
   */
  async function teamMoveOrRefuse(userId: string, row: q.SignRow) {
    const move = await deps.teamMoves?.pending(userId);
    if (!move || !row.signedAt || row.signedAt < move.movedAt) return;
    const titles = await q.titlesInstalledBefore(db, userId, move.movedAt);
    throw failWith(
      'TEAM_MOVED',
      { headers: { [REMEDY_HEADER]: 'acknowledge-team-move' } },
      teamMoveWarning(move.reason, titles),
    );
  }

  /** An artifact handed out (install link): recovery re-signs the most recently used first. */
  const used = (row: q.SignRow) => q.markUsed(db, row.id, clock());

  /** Retries once when a concurrent request made the same row first. */
  async function once<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      return work();
    }
  }

  /**
   * Queues a sign unless one is under way or the artifact there still serves every device: a new
   * row, or the existing one set Pending again (its artifact stays served until a new one commits).
   */
  async function enqueue(
    key: q.SignKey,
    fields: { sourceKey: string | null; title: string; sourceTag?: string | null },
  ) {
    const devices = await signing.registeredDevices(key.userId);
    // A device Apple has not listed yet counts: the sign waits for it in the queue.
    const waitsForApple = devices.length === 0 && (await signing.waitsForApple(key.userId));
    if (devices.length === 0 && !waitsForApple) throw noDevice();
    // An artifact iOS would refuse (revoked, expired) is signed again, whatever devices it lists.
    const before = await q.findSign(db, key);
    const refusedArtifact = before?.fileKey && (await problemOf(before)) ? before.artifactId : undefined;
    return once(() =>
      db.transaction(async (tx) => {
        const now = clock();
        const existing = await q.lockSign(tx, key);
        if (existing && existing.state !== 'idle') return existing;
        const sameSource = fields.sourceTag === undefined || existing?.sourceTag === fields.sourceTag;
        const isRefused = refusedArtifact !== undefined && existing?.artifactId === refusedArtifact;
        if (existing && !waitsForApple && isCurrent(existing, devices) && sameSource && !isRefused)
          return existing;
        const queued = {
          status: 'Pending' as const,
          state: 'queued' as const,
          attempts: 0,
          failures: 0,
          lostLeases: 0,
          lastReason: null,
          resigning: false,
          requestedAt: now,
          updatedAt: now,
        };
        const row = existing
          ? (await q.updateSign(tx, existing.id, {
              ...queued,
              sourceKey: fields.sourceKey,
              title: fields.title,
            }))!
          : await q.insertSign(tx, { ...key, ...queued, sourceKey: fields.sourceKey, title: fields.title });
        await publishSign(bus, row, tx);
        return row;
      }),
    );
  }

  const versionKey = (userId: string, appId: number, appVerId: number, type: SignType): q.SignKey => ({
    userId,
    source: 'version' as SignSource,
    appId,
    appVerId,
    signType: type,
  });

  const featherKey = (userId: string): q.SignKey => ({
    userId,
    source: 'feather',
    appId: 0,
    appVerId: 0,
    signType: 0,
  });

  /** The caller's artifact, or 404 (another user's artifact is simply not theirs to find). */
  async function artifactOf(key: q.SignKey) {
    const row = await q.findSign(db, key);
    if (!row?.fileKey || !row.artifactId) throw notSigned();
    return row;
  }

  function installUrl(row: q.SignRow, baseUrl: string) {
    const manifest = new URL(
      urls.sign(`/files/sign/${row.artifactId}/manifest.plist`, settings.urlTtlSeconds),
      baseUrl,
    ).toString();
    return { url: `itms-services://?action=download-manifest&url=${encodeURIComponent(manifest)}` };
  }

  /** A mode that injects the operator's dylibs is offered only when every kind it injects is configured. */
  function isOffered(type: SignType) {
    return signModeOf(type).injects.every((kind) => settings.hasDylibs[kind]);
  }

  function refuseUnconfiguredMode(type: SignType) {
    const mode = signModeOf(type);
    if (!isOffered(type)) throw fail('MODE_NOT_OFFERED', mode.confirmLabel ?? mode.apiName);
  }

  function requireFeather() {
    if (!settings.featherIpa) throw featherNotOffered();
    return settings.featherIpa;
  }

  return {
    /** The sign types this server signs in (GET /api/config tells the web app, which disables the others). */
    offeredTypes: (): SignType[] => SIGN_TYPES.filter(isOffered),

    /** PUT /api/sign/{app_id}/{app_ver_id}. */
    async request(userId: string, appId: number, appVerId: number, type: SignType): Promise<SignAnswer> {
      refuseUnconfiguredMode(type);
      const version = await deps.versions.signable(appId, appVerId);
      if (!version) throw fail('NOT_DECRYPTED');
      const row = await enqueue(versionKey(userId, appId, appVerId, type), {
        sourceKey: version.fileKey,
        title: version.title,
      });
      return { app_id: String(appId), app_ver_id: String(appVerId), type, status: row.status };
    },

    /** GET /api/check/sign/...: 406 when a device of the caller is newer than the artifact. */
    async check(userId: string, appId: number, appVerId: number, type: SignType): Promise<SignCheckAnswer> {
      const row = await artifactOf(versionKey(userId, appId, appVerId, type));
      if (!isCurrent(row, await signing.registeredDevices(userId))) {
        throw fail('SIGNED_BEFORE_DEVICE');
      }
      await preflightOrRefuse(row);
      return { status: 'Done', signed_at: row.signedAt!.toISOString(), udids: row.udids ?? [] };
    },

    /**
     * GET /api/install/...: the itms-services URL of the artifact's manifest, once the preflight
     * passes. Which device installs is not known here, so the devices the profile lists are
     * check-sign's 406 alone: an artifact for the iPhone installs on it while a newer iPad waits.
     */
    async install(userId: string, appId: number, appVerId: number, type: SignType, baseUrl: string) {
      const row = await artifactOf(versionKey(userId, appId, appVerId, type));
      await preflightOrRefuse(row);
      await teamMoveOrRefuse(userId, row);
      await used(row);
      return installUrl(row, baseUrl);
    },

    /** POST /api/team-move/acknowledge: the user read what moving to another team means for their apps. */
    async acknowledgeTeamMove(userId: string): Promise<void> {
      await deps.teamMoves?.acknowledge(userId);
    },

    /** The manifest a signed URL names, or undefined when its artifact was replaced or removed. */
    async manifest(artifactId: string, baseUrl: string): Promise<string | undefined> {
      const row = await q.findArtifact(db, artifactId);
      if (!row?.fileKey) return undefined;
      await used(row);
      const fileName = `${row.title}.ipa`;
      const presigned = await files.presignGet(row.fileKey, {
        expiresInSeconds: settings.urlTtlSeconds,
        fileName,
      });
      const ipaUrl =
        presigned ??
        new URL(urls.sign(`/files/sign/${artifactId}/app.ipa`, settings.urlTtlSeconds), baseUrl).toString();
      return installManifest({
        ipaUrl,
        bundleId: row.bundleId ?? '',
        bundleVersion: row.bundleVersion ?? '1.0',
        title: row.title,
      });
    },

    /** The stored artifact a signed URL names. */
    async artifactFile(artifactId: string) {
      const row = await q.findArtifact(db, artifactId);
      return row?.fileKey ? { fileKey: row.fileKey, fileName: `${row.title}.ipa` } : undefined;
    },

    /**
     * GET /api/feather/install: the operator's Feather signed for the caller's devices. A sign
     * under way is waited for (a Feather IPA is small); past the wait the caller is asked to retry.
     */
    async featherInstall(userId: string, baseUrl: string) {
      const feather = requireFeather();
      const sourceTag = await fileTag(feather);
      let row = await enqueue(featherKey(userId), { sourceKey: null, title: FEATHER_TITLE, sourceTag });
      if (row.state !== 'idle') {
        const settled = waitForEvent(
          bus,
          (e) => e.kind === 'sign-settled' && e.id === row.id,
          settings.featherWaitMs,
        );
        // Looked at again after listening: it may have settled in between.
        const now = await q.findSign(db, featherKey(userId));
        if (now && now.state !== 'idle') await settled;
        else void settled.catch(() => {});
        row = (await q.findSign(db, featherKey(userId))) ?? row;
      }
      if (row.state !== 'idle') {
        throw fail('FEATHER_SIGNING');
      }
      if (!row.fileKey || row.sourceTag !== sourceTag) {
        throw fail('FEATHER_FAILED', row.lastReason);
      }
      // A refused artifact was signed again above; one that still fails says why.
      await preflightOrRefuse(row);
      await used(row);
      return installUrl(row, baseUrl);
    },

    /**
     * GET /api/feather/cert: a URL of a zip with a .p12 of the Feather certificate (a certificate
     * of its own, so a leaked one revoked leaves every other install working) and a profile for it, and the .p12's password, new each time. The URL carries the password sealed, so
     * nothing is stored and the zip is made when it is fetched.
     */
    async featherCert(userId: string, baseUrl: string): Promise<FeatherCertAnswer> {
      requireFeather();
      if (!(await signing.signingMaterial(userId))) throw noDevice();
      const password = Array.from(
        { length: 16 },
        () => PASSWORD_ALPHABET[randomInt(PASSWORD_ALPHABET.length)],
      ).join('');
      const token = secrets.seal(JSON.stringify({ u: userId, p: password }), FEATHER_CERT_PURPOSE);
      const url = new URL(
        urls.sign(`/files/feather/cert/${token}`, settings.urlTtlSeconds),
        baseUrl,
      ).toString();
      return { url, password };
    },

    /** The zip a Feather cert URL names; undefined when its token does not open or its user has no device now. */
    async featherCertFile(token: string): Promise<Buffer | undefined> {
      if (!settings.featherIpa) return undefined;
      let sealed: { u: string; p: string };
      try {
        sealed = JSON.parse(secrets.open(token, FEATHER_CERT_PURPOSE).toString('utf8')) as typeof sealed;
      } catch {
        return undefined;
      }
      const material = await signing.featherMaterial(sealed.u);
      return material ? featherCertZip(material, sealed.p) : undefined;
    },
  };
}

/** After an admin delete: the version's signs, their artifacts and its digest cache go too. */
export function dropSignsOfVersions(deps: {
  db: Database;
  files: Pick<FileStore, 'delete'>;
  cache: Pick<SignCache, 'drop'>;
  log: { warn(obj: object, msg: string): void };
}) {
  return async (removed: Array<{ appId: number; appVerId: number | null }>) => {
    for (const entry of removed) {
      if (entry.appVerId === null) continue;
      const rows = await q.deleteSignsOfVersion(deps.db, entry.appId, entry.appVerId);
      for (const row of rows) {
        if (row.fileKey)
          await deps.files
            .delete(row.fileKey)
            .catch((err: unknown) =>
              deps.log.warn({ err, key: row.fileKey }, 'could not delete a signed file'),
            );
      }
      await deps.cache.drop(entry.appId, entry.appVerId).catch(() => {});
    }
  };
}

export type SignService = ReturnType<typeof createSignService>;
