/**
 * The signing service: the identity and the profile that sign for each user, the certificates in
 * use as recovery checks and replaces them, and what the admin console shows of the identity.
 */
import { X509Certificate } from 'node:crypto';
import { loadIdentity, parseProfile, type IdentitySource } from '@sideport/ipa';
import type { Database } from '../../db/client.js';
import { certificateDer } from '../../platform/pki.js';
import { DeviceWaitsForApple, isDeviceWaitingForApple, type AppleWait } from '../devices/apple-wait.js';
import type { DeviceService } from '../devices/service.js';
import { canonicalUdid } from '../devices/udid.js';
import { certificateFingerprint } from './certificate-details.js';
import type { CertificateRegistry, CertificateStatus } from './certificates.js';
import type {
  CertificateReplacement,
  CurrentCertificate,
  ExplicitAppId,
  IdentityDetails,
  IdentityPlacement,
  SigningIdentityProvider,
} from './ports.js';
import * as q from './queries.js';

/** What a sign job needs for one user: an identity and a profile listing the user's Registered devices. */
export interface SigningMaterial {
  identity: IdentitySource;
  profile: Buffer;
  profileUuid: string;
  /** The devices the profile lists (its Registered devices when it was made), sorted by UDID. */
  udids: string[];
  identityKind: 'dev' | 'apple';
  /** The certificate `identity` holds: what the artifact's row records for its preflight. */
  certificate: Pick<CurrentCertificate, 'fingerprint' | 'notBefore' | 'notAfter'>;
  profileExpiresAt: Date;
  /** SHA-256 fingerprints of the profile's DeveloperCertificates (it names `certificate` among them). */
  profileCertificates: string[];
  /** The explicit App ID the profile is for (a DUP copy's); absent for the wildcard's. */
  appId?: ExplicitAppId;
}

const DAY_MS = 86_400_000;

const sortedTypes = (appId: ExplicitAppId) => [...new Set(appId.capabilityTypes)].sort();
const storedTypes = (row: object) => ('capabilityTypes' in row ? (row.capabilityTypes as string[]) : []);
const sameList = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((v, i) => v === b[i]);

export interface SigningServiceDeps {
  db: Database;
  clock: () => Date;
  /** The identity in use: the dev identity, or the first account of the pool. */
  identity: SigningIdentityProvider;
  /** Whose Registered devices a profile lists. */
  devices: Pick<DeviceService, 'registeredDevices' | 'listDevices'>;
  /** Holds a device Apple left out of a new profile (optional: tests of signing alone). */
  appleWait?: Pick<AppleWait, 'hold' | 'listed'>;
  /** The certificates signed with and their OCSP status. */
  certificates: CertificateRegistry;
  /** RENEW_BEFORE_DAYS: a profile expiring sooner than this is made again at its next use. */
  renewBeforeMs: number;
  /**
   * With several developer accounts (pool/account-pool.ts): the one a user's devices are on signs
   * for them, and a profile another account made is deleted there.
   */
  pool?: IdentityPlacement | undefined;
}

/** One identity as recovery sees it: its certificate now, and a new one in its place. */
export interface Signer {
  description: string;
  currentCertificate(): Promise<CurrentCertificate>;
  replaceCertificate(reason: string, options?: { ifCurrent?: string }): Promise<CertificateReplacement>;
}

/** Fingerprints of a profile's DeveloperCertificates. */
const profileCertificatesOf = (profile: Buffer) =>
  parseProfile(profile).developerCertificates.map((c) => certificateFingerprint(c.der));

/**
 * The UDIDs asked for that a made profile does not list (Apple's wait after a registration). A
 * profile that lists no device at all (one for every device) leaves none out.
 */
function leftOut(profile: Buffer, udids: readonly string[]): string[] {
  const provisioned = parseProfile(profile).provisionedDevices;
  if (provisioned.length === 0) return [];
  const listed = new Set(provisioned.map(canonicalUdid));
  return udids.filter((udid) => !listed.has(udid));
}

// A .p12 is opened once per process to learn which certificate it holds.
const p12Fingerprints = new WeakMap<Buffer, string>();

/** The fingerprint of the certificate an identity source holds. */
function sourceFingerprint(source: IdentitySource): string {
  if ('certPem' in source) return certificateFingerprint(new X509Certificate(source.certPem).raw);
  let known = p12Fingerprints.get(source.p12);
  if (known === undefined) {
    known = certificateFingerprint(certificateDer(loadIdentity(source).certificate));
    p12Fingerprints.set(source.p12, known);
  }
  return known;
}

/**
 * Signing material per user. The profile is made on first use and kept while it lists exactly the
 * user's Registered devices, names the identity's current certificate and is not about to expire
 * (RENEW_BEFORE_DAYS); otherwise a new one is made (profiles cannot be edited) and the old one
 * dropped.
 */
export function createSigningService({
  db,
  clock,
  identity: defaultIdentity,
  devices,
  certificates,
  renewBeforeMs,
  pool,
  appleWait,
}: SigningServiceDeps) {
  // One profile made at a time per user in this process: two sign jobs of a user need only one.
  const making = new Map<string, Promise<SigningMaterial | undefined>>();

  /** The current certificate and the source holding it, read as one (a replacement may fall between two reads). */
  async function currentSigner(
    identity: SigningIdentityProvider,
  ): Promise<{ certificate: CurrentCertificate; source: IdentitySource }> {
    for (let attempt = 0; ; attempt++) {
      const certificate = await identity.currentCertificate();
      const source = await identity.source();
      if (sourceFingerprint(source) === certificate.fingerprint) {
        await certificates.remember(certificate, identity.kind);
        return { certificate, source };
      }
      if (attempt === 2) throw new Error('The signing certificate kept changing while it was read.');
    }
  }

  /** The identity that signs for the user and the UDIDs a profile of theirs lists; undefined with no Registered device. */
  async function signerOf(
    userId: string,
  ): Promise<{ identity: SigningIdentityProvider; accountId: number | null; udids: string[] } | undefined> {
    const placed = pool ? await pool.identityOf(userId) : undefined;
    if (pool && !placed) return undefined;
    const accountId = placed?.accountId ?? null;
    // The devices of the account that signs: a user's devices share one (a move is one commit).
    const registered = (await devices.registeredDevices(userId)).filter(
      (d) => !placed || d.accountId === accountId,
    );
    if (registered.length === 0) return undefined;
    const udids = [...new Set(registered.map((d) => canonicalUdid(d.udid)))].sort();
    return { identity: placed?.provider ?? defaultIdentity, accountId, udids };
  }

  async function materialFor(userId: string, wanted?: ExplicitAppId): Promise<SigningMaterial | undefined> {
    const signer = await signerOf(userId);
    if (!signer) return undefined;
    const { identity, accountId, udids } = signer;
    // An identity that makes no explicit App IDs (the dev identity) signs the copy with the wildcard's.
    const appId = identity.makesExplicitAppIds ? wanted : undefined;
    const { certificate, source } = await currentSigner(identity);
    const stored = appId
      ? await q.findCopyProfile(db, userId, appId.identifier)
      : await q.findUserProfile(db, userId);
    const material = (
      profile: Buffer,
      uuid: string,
      expiresAt: Date,
      profileCertificates: string[],
    ): SigningMaterial => ({
      identity: source,
      profile,
      profileUuid: uuid,
      udids,
      identityKind: identity.kind,
      certificate: {
        fingerprint: certificate.fingerprint,
        notBefore: certificate.notBefore,
        notAfter: certificate.notAfter,
      },
      profileExpiresAt: expiresAt,
      profileCertificates,
      ...(appId ? { appId } : {}),
    });
    // A profile cannot outlast its certificate: one that expires with it is as fresh as can be.
    const freshUntil =
      Math.min(clock().getTime() + Math.max(renewBeforeMs, DAY_MS), certificate.notAfter.getTime()) - 60_000;
    if (
      stored &&
      stored.accountId === accountId &&
      stored.expiresAt.getTime() >= freshUntil &&
      stored.udids.length === udids.length &&
      stored.udids.every((udid, i) => udid === udids[i]) &&
      (!appId || sameList(storedTypes(stored), sortedTypes(appId)))
    ) {
      const bytes = Buffer.from(stored.profile, 'base64');
      const listed =
        stored.certificateFingerprint === certificate.fingerprint
          ? [certificate.fingerprint]
          : profileCertificatesOf(bytes);
      if (listed.includes(certificate.fingerprint))
        return material(bytes, stored.uuid, stored.expiresAt, listed);
    }
    const request = appId
      ? { userId, udids, appId: { ...appId, capabilityTypes: sortedTypes(appId) } }
      : { userId, udids };
    const made = await identity.makeProfile(request).catch(async (err: unknown) => {
      if (isDeviceWaitingForApple(err)) await appleWait?.hold(userId, err.udids);
      throw err;
    });
    const left = leftOut(made.bytes, udids);
    if (left.length > 0 && appleWait) {
      // Apple registered them but lists them in no profile yet: whatever this signs would not
      // install there. They wait in Process; the sign goes back to the queue.
      if (made.appleProfileId) await identity.dropProfile?.(made.appleProfileId).catch(() => {});
      await appleWait.hold(userId, left);
      throw new DeviceWaitsForApple(left);
    }
    await appleWait?.listed(userId);
    const listed = profileCertificatesOf(made.bytes);
    // Made for a certificate that was replaced meanwhile: the next use makes one for the new one.
    if (!listed.includes(certificate.fingerprint))
      throw new Error('The signing certificate changed while the profile was made; sign again.');
    const row = {
      userId,
      profile: made.bytes.toString('base64'),
      uuid: made.uuid,
      udids,
      appleProfileId: made.appleProfileId ?? null,
      accountId,
      certificateFingerprint: certificate.fingerprint,
      createdAt: clock(),
      expiresAt: made.expiresAt,
    };
    if (appId)
      await q.saveCopyProfile(db, {
        ...row,
        bundleId: appId.identifier,
        capabilityTypes: sortedTypes(appId),
      });
    else await q.saveUserProfile(db, row);
    if (stored?.appleProfileId) {
      // Deleted where it was made: another account's, when the user's devices moved.
      const maker = stored.accountId === accountId ? identity : await pool?.providerOf(stored.accountId ?? 0);
      await maker?.dropProfile?.(stored.appleProfileId).catch(() => {});
    }
    return material(made.bytes, made.uuid, made.expiresAt, listed);
  }

  /**
   * With `appId` (a DUP copy, when the operator has explicit App IDs made for copies), the profile
   * is for that explicit App ID, where the identity makes them; the wildcard's otherwise.
   */
  function signingMaterial(userId: string, appId?: ExplicitAppId): Promise<SigningMaterial | undefined> {
    const key = `${userId}\0${appId?.identifier ?? ''}`;
    let pending = making.get(key);
    if (!pending) {
      pending = materialFor(userId, appId).finally(() => making.delete(key));
      making.set(key, pending);
    }
    return pending;
  }

  /** Every identity that signs: the dev identity, or each developer account this process has a key for. */
  const identities = async (): Promise<SigningIdentityProvider[]> =>
    pool ? pool.providers() : [defaultIdentity];

  /** An identity's certificate in use now (made on first use), recorded among those signed with. */
  const certificateOf = async (identity: SigningIdentityProvider) =>
    (await currentSigner(identity)).certificate;

  /** A new certificate in place of `options.ifCurrent` (or the current one), recorded with why the old one went. */
  async function replaceOf(
    identity: SigningIdentityProvider,
    reason: string,
    options: { ifCurrent?: string } = {},
  ): Promise<CertificateReplacement> {
    const result = await identity.replaceCertificate(reason, options);
    if (result.replaced && options.ifCurrent !== undefined)
      await certificates.markReplaced(options.ifCurrent, reason);
    await certificates.remember(result.certificate, identity.kind);
    return result;
  }

  const identityDetails = async (): Promise<IdentityDetails> =>
    defaultIdentity.details
      ? defaultIdentity.details()
      : { teamId: null, certificateName: null, certificateExpiresAt: null };

  return {
    /** undefined when the user has no Registered device (nothing to sign for). */
    signingMaterial,

    /**
     * The team that signs for the user now: their account's in a pool, else the one identity's;
     * null when not known yet (a pool user with no Registered device, an identity with no
     * certificate). Never calls Apple.
     */
    async teamOf(userId: string): Promise<string | null> {
      const placed = pool ? await pool.identityOf(userId) : undefined;
      const identity = placed?.provider ?? (pool ? undefined : defaultIdentity);
      return (await identity?.details?.())?.teamId ?? null;
    },

    /**
     * What GET /api/feather/cert hands the user: the Feather certificate (never the signing one)
     * and a profile for it listing the user's Registered devices; undefined without one.
     */
    async featherMaterial(
      userId: string,
    ): Promise<{ identity: IdentitySource; profile: Buffer } | undefined> {
      const signer = await signerOf(userId);
      if (!signer) return undefined;
      const feather = await signer.identity.featherCertificate();
      const profile = await signer.identity.makeFeatherProfile({ userId, udids: signer.udids });
      return { identity: feather.source, profile };
    },

    /** The first identity's Feather certificate as kept (the admin console; never calls Apple). */
    featherDetails: () => defaultIdentity.featherDetails(),

    /** A new Feather certificate for the first identity; the one it replaces is handed out no more. */
    rotateFeatherCertificate: async () => (await defaultIdentity.rotateFeatherCertificate()).certificate,

    /** The first identity's certificate in use now (the dev identity's, or the first account's). */
    currentCertificate: () => certificateOf(defaultIdentity),

    /** A new certificate for the first identity: see SigningIdentityProvider.replaceCertificate. */
    replaceCertificate: (reason: string, options: { ifCurrent?: string } = {}) =>
      replaceOf(defaultIdentity, reason, options),

    /** Every identity that signs, as recovery checks and replaces their certificates. */
    async signers(): Promise<Signer[]> {
      return (await identities()).map((identity) => ({
        description: identity.description,
        currentCertificate: () => certificateOf(identity),
        replaceCertificate: (reason, options) => replaceOf(identity, reason, options),
      }));
    },

    /** A certificate's revocation status, asking its responder when the kept answer is too old. */
    certificateStatus: (fingerprint: string): Promise<CertificateStatus> => certificates.status(fingerprint),

    /**
     * Makes again every profile that names another certificate than the current one or expires
     * within RENEW_BEFORE_DAYS (recovery: "the affected profiles are made again"); returns how many.
     * A user whose profile cannot be made is told to `onError` and skipped.
     */
    async refreshProfiles(onError: (userId: string, err: unknown) => void): Promise<number> {
      const current = await Promise.all((await identities()).map(certificateOf));
      // A profile cannot outlast its certificate: materialFor keeps one that ends with it.
      const before = new Date(
        Math.min(clock().getTime() + renewBeforeMs, ...current.map((c) => c.notAfter.getTime())) - 60_000,
      );
      let made = 0;
      for (const userId of await q.usersWithStaleProfiles(
        db,
        current.map((c) => c.fingerprint),
        before,
      )) {
        // One user's refusal (Apple's, say) stops nobody else's: their re-sign tries again and says why.
        const material = await signingMaterial(userId).catch((err: unknown) => onError(userId, err));
        if (material) made += 1;
      }
      return made;
    },

    identityInfo: () => ({ kind: defaultIdentity.kind, description: defaultIdentity.description }),

    /** identityInfo and the certificate in use, for the admin console. */
    identityDetails,

    /** The kept revocation status of the certificate in use (never asks a responder, nor Apple: the admin console). */
    async certificateStatusNow(): Promise<CertificateStatus | undefined> {
      const { certificateFingerprint: fingerprint } = await identityDetails();
      return fingerprint ? certificates.cachedStatus(fingerprint) : undefined;
    },

    /** The dev identity's CA certificate (PEM), which checks its signatures; undefined for Apple's. */
    async identityCaPem(): Promise<string | undefined> {
      return defaultIdentity.caCertificatePem ? defaultIdentity.caCertificatePem() : undefined;
    },

    /**
     * Whether an identity signs for the user now (a Registered device, on an account in use): a
     * certificate or profile of theirs can be renewed. Never calls Apple; an account whose key
     * another process holds counts as one that signs.
     */
    async canSignFor(userId: string): Promise<boolean> {
      try {
        return (await signerOf(userId)) !== undefined;
      } catch {
        return true;
      }
    },

    /** Whether a device of the user waits for Apple to list it in profiles (a sign asked for then waits with it). */
    async waitsForApple(userId: string): Promise<boolean> {
      return (await devices.listDevices(userId)).some((d) => d.appleWaitReason !== null);
    },

    /** The user's Registered devices and when each became so (check-sign compares an artifact with them). */
    async registeredDevices(userId: string): Promise<Array<{ udid: string; registeredAt: Date | null }>> {
      return (await devices.registeredDevices(userId)).map((d) => ({
        udid: d.udid,
        registeredAt: d.registeredAt,
      }));
    },
  };
}

export type SigningService = ReturnType<typeof createSigningService>;
