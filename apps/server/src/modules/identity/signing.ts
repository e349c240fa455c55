import { createHash, X509Certificate } from 'node:crypto';
import { describeChain, loadIdentity, parseProfile, x509Of, type IdentitySource } from '@sideport/ipa';
import type { Database } from '../../db/client.js';
import type { SecretBox } from '../../platform/secrets.js';
import { settingOrCreate } from '../../platform/settings.js';
import type { DeviceRegistrar } from '../devices/registration.js';
import type { AccountPool } from './account-pool.js';
import type { DeviceService } from '../devices/service.js';
import { canonicalUdid } from '../devices/udid.js';
import type { CertificateRegistry, CertificateStatus } from './certificates.js';
import {
  createDevIdentity,
  createDevProfile,
  devIdentitySource,
  DEV_IDENTITY_LABEL,
  issueDevCertificate,
  renewDevIdentity,
  type DevIdentity,
} from './dev-identity.js';
import { certificateDer } from '../../platform/pki.js';
import * as q from './queries.js';

/**
 * Who signs: the operator's Apple identity (App Store Connect) or Sideport's dev identity. Each
 * makes the provisioning profile that lists a user's devices, and is what the devices domain's
 * registration registers a paid device with (DeviceRegistrar): Apple's registers it on the
 * developer account, the dev identity has nothing to register.
 */
export interface SigningIdentityProvider extends DeviceRegistrar {
  readonly kind: 'dev' | 'apple';
  /** For the admin console and the start-up line. */
  readonly description: string;
  source(): Promise<IdentitySource>;
  makeProfile(request: { userId: string; udids: readonly string[] }): Promise<{
    bytes: Buffer;
    uuid: string;
    expiresAt: Date;
    appleProfileId?: string;
  }>;
  /** Deletes a profile that a new one replaced (Apple's; nothing to do for the dev identity). */
  dropProfile?(appleProfileId: string): Promise<void>;
  /** What the admin console shows; never calls Apple. */
  details?(): Promise<IdentityDetails>;
  /**
   * Checked at start: SIGN_P12's chain is completed up to a root (fetching its issuer once when
   * the .p12 lacks it), or the start is refused with a sentence saying which issuer is missing.
   */
  prepare?(): Promise<void>;
  /** The CA that issued the signing certificate, PEM: the dev identity's own (Apple's is public). */
  caCertificatePem?(): Promise<string>;
  /** The certificate source() signs with now (made on first use, as source() would). */
  currentCertificate(): Promise<CurrentCertificate>;
  /**
   * Has a new certificate made in place of the current one (revoked, or about to expire): under a
   * database lock, so several processes that notice at once make one. With `ifCurrent`, nothing is
   * made when the current certificate is another already (someone replaced it first).
   */
  replaceCertificate(reason: string, options?: { ifCurrent?: string }): Promise<CertificateReplacement>;
  /**
   * The Feather certificate (GET /api/feather/cert): a certificate of its own on the same team,
   * never the one source() signs with, so revoking it leaves every install of the service's signs
   * working. Made on first use.
   */
  featherCertificate(): Promise<FeatherCertificate>;
  /** The Feather certificate as kept, without making one (the admin console); undefined before the first. */
  featherDetails(): Promise<IdentityDetails | undefined>;
  /** A new Feather certificate in place of the current one (an admin's rotation after a leak). */
  rotateFeatherCertificate(): Promise<FeatherCertificate>;
  /** A profile for the Feather certificate listing `udids` (Feather signs with both). */
  makeFeatherProfile(request: { userId: string; udids: readonly string[] }): Promise<Buffer>;
}

/** The Feather certificate and its key. */
export interface FeatherCertificate {
  source: IdentitySource;
  certificate: CurrentCertificate;
}

/** A signing certificate as preflight and recovery need it. */
export interface CurrentCertificate {
  pem: string;
  /** SHA-256 of its DER, lower-case hex: how artifacts, profiles and the OCSP cache name it. */
  fingerprint: string;
  /** Upper-case hex. */
  serial: string;
  notBefore: Date;
  notAfter: Date;
  /** Its issuer, when the identity holds it (the dev CA, a .p12's chain); fetched from the certificate's AIA otherwise. */
  issuerPem?: string;
}

export interface CertificateReplacement {
  certificate: CurrentCertificate;
  /** False when `ifCurrent` was no longer current: another process replaced it first. */
  replaced: boolean;
  /** What changed beyond the certificate, in a sentence (SIGN_P12 no longer used). */
  note?: string;
}

/** SHA-256 of a certificate's DER, as preflight and the OCSP cache name certificates. */
export const certificateFingerprint = (der: Buffer) => createHash('sha256').update(der).digest('hex');

export function describeCertificate(pem: string, issuerPem?: string): CurrentCertificate {
  const cert = new X509Certificate(pem);
  return {
    pem: cert.toString(),
    fingerprint: certificateFingerprint(cert.raw),
    serial: cert.serialNumber.toUpperCase(),
    notBefore: new Date(cert.validFrom),
    notAfter: new Date(cert.validTo),
    ...(issuerPem ? { issuerPem } : {}),
  };
}

export interface IdentityDetails {
  teamId: string | null;
  /** The signing certificate's common name; null until one exists (made on first use). */
  certificateName: string | null;
  certificateExpiresAt: Date | null;
  /** Upper-case hex; null until one exists. */
  certificateSerial?: string | null;
  /** SHA-256 of its DER; null until one exists. */
  certificateFingerprint?: string | null;
  /**
   * The certificates its signatures carry: the signing certificate, then its issuers up to the
   * root (as far as they are known without fetching); empty until one exists.
   */
  certificateChain?: { name: string; expiresAt: Date }[];
}

/** certificateDetails of an identity's certificate, with its chain as the signatures carry it. */
export function chainDetails(source: IdentitySource): IdentityDetails {
  const identity = loadIdentity(source);
  const leaf = x509Of(identity.certificate);
  return {
    ...certificateDetails(leaf.toString()),
    certificateChain: describeChain([leaf, ...identity.chain]),
  };
}

/** Team (the OU, as Apple's certificates carry it), name and expiry of a PEM certificate. */
export function certificateDetails(certPem: string): IdentityDetails {
  const cert = new X509Certificate(certPem);
  // Node writes the subject one 'KEY=value' per line.
  const field = (key: string) =>
    cert.subject
      .split('\n')
      .find((line) => line.startsWith(`${key}=`))
      ?.slice(key.length + 1) ?? null;
  return {
    teamId: field('OU'),
    certificateName: field('CN'),
    certificateExpiresAt: new Date(cert.validTo),
    certificateSerial: cert.serialNumber.toUpperCase(),
    certificateFingerprint: certificateFingerprint(cert.raw),
  };
}

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
}

const DEV_IDENTITY_SETTING = 'dev_identity';
const DEV_IDENTITY_PURPOSE = 'dev-identity';
const DEV_FEATHER_SETTING = 'dev_feather_identity';
const FEATHER_PURPOSE = 'feather-identity';
const FEATHER_LABEL = 'Sideport Feather';

/** Stores a dev identity (sealed) as the one every process signs with; recovery's replacement writes it so. */
export async function saveDevIdentity(
  db: Database,
  secrets: SecretBox,
  identity: DevIdentity,
): Promise<void> {
  await q.writeSetting(
    db,
    DEV_IDENTITY_SETTING,
    secrets.seal(JSON.stringify(identity), DEV_IDENTITY_PURPOSE),
  );
}

/**
 * The dev identity (docs/architecture.md, Topology, embedded default): made once, sealed with SECRET_KEY and
 * kept in the database, so every process and every restart signs with the same one. It is read
 * from there each time (opened again only when it changed), so a certificate another process made
 * in place of a revoked one is used at once.
 */
export function createDevIdentityProvider(deps: {
  db: Database;
  secrets: SecretBox;
  clock: () => Date;
  /** RENEW_BEFORE_DAYS: a renewal lasts well beyond it (a new CA when the old one would not). */
  renewBeforeMs?: number;
}): SigningIdentityProvider {
  const { db, secrets, clock } = deps;
  let opened: { sealed: string; identity: DevIdentity } | undefined;
  const open = (sealed: string): DevIdentity => {
    if (opened?.sealed !== sealed)
      opened = {
        sealed,
        identity: JSON.parse(secrets.open(sealed, DEV_IDENTITY_PURPOSE).toString('utf8')) as DevIdentity,
      };
    return opened.identity;
  };
  const identity = async () =>
    open(
      await settingOrCreate(db, DEV_IDENTITY_SETTING, () =>
        secrets.seal(JSON.stringify(createDevIdentity({ clock })), DEV_IDENTITY_PURPOSE),
      ),
    );
  const describe = (made: DevIdentity) => describeCertificate(made.certPem, made.caCertPem);

  // The Feather certificate: issued by the same CA for a key of its own, kept sealed beside it.
  type DevFeather = { caCertPem: string; certPem: string; keyPem: string };
  const issueFeather = (authority: DevIdentity): DevFeather => ({
    caCertPem: authority.caCertPem,
    ...issueDevCertificate(authority, { clock, purpose: FEATHER_LABEL }),
  });
  const sealFeather = (feather: DevFeather) => secrets.seal(JSON.stringify(feather), FEATHER_PURPOSE);
  const openFeather = (sealed: string) =>
    JSON.parse(secrets.open(sealed, FEATHER_PURPOSE).toString('utf8')) as DevFeather;
  const featherOf = (feather: DevFeather): FeatherCertificate => ({
    source: {
      certPem: feather.certPem,
      keyPem: feather.keyPem,
      chain: [Buffer.from(feather.caCertPem, 'utf8')],
    },
    certificate: describeCertificate(feather.certPem, feather.caCertPem),
  });
  async function devFeather(): Promise<DevFeather> {
    const authority = await identity();
    const stored = openFeather(
      await settingOrCreate(db, DEV_FEATHER_SETTING, () => sealFeather(issueFeather(authority))),
    );
    // Issued by a CA recovery has since replaced: issued again by the current one.
    if (stored.caCertPem === authority.caCertPem) return stored;
    const again = issueFeather(authority);
    await q.writeSetting(db, DEV_FEATHER_SETTING, sealFeather(again));
    return again;
  }

  return {
    kind: 'dev',
    featherCertificate: async () => featherOf(await devFeather()),
    async featherDetails() {
      const sealed = await q.readSetting(db, DEV_FEATHER_SETTING);
      return sealed === undefined ? undefined : certificateDetails(openFeather(sealed).certPem);
    },
    async rotateFeatherCertificate() {
      const made = issueFeather(await identity());
      await q.writeSetting(db, DEV_FEATHER_SETTING, sealFeather(made));
      return featherOf(made);
    },
    async makeFeatherProfile({ userId, udids }) {
      const feather = await devFeather();
      return createDevProfile(
        { ...(await identity()), certPem: feather.certPem, keyPem: feather.keyPem },
        { devices: udids, name: `${FEATHER_LABEL} ${userId}`, clock },
      ).bytes;
    },
    description: `${DEV_IDENTITY_LABEL}: a local CA made by Sideport. It runs the whole pipeline; real devices will not install what it signs.`,
    source: async () => devIdentitySource(await identity()),
    details: async () => chainDetails(devIdentitySource(await identity())),
    caCertificatePem: async () => (await identity()).caCertPem,
    currentCertificate: async () => describe(await identity()),
    async replaceCertificate(_reason, options = {}) {
      await identity(); // made first, if it never was
      return db.transaction(async (tx) => {
        await q.lockCertificateMaking(tx);
        const stored = open((await q.readSetting(tx, DEV_IDENTITY_SETTING))!);
        if (options.ifCurrent !== undefined && describe(stored).fingerprint !== options.ifCurrent) {
          return { certificate: describe(stored), replaced: false };
        }
        const renewed = renewDevIdentity(stored, { clock, renewBeforeMs: deps.renewBeforeMs ?? 14 * DAY_MS });
        await saveDevIdentity(tx, secrets, renewed);
        const note =
          renewed.caCertPem === stored.caCertPem
            ? undefined
            : 'Its CA was close to its end too: a new CA issued the new certificate.';
        return { certificate: describe(renewed), replaced: true, ...(note ? { note } : {}) };
      });
    },
    async makeProfile({ userId, udids }) {
      const made = createDevProfile(await identity(), {
        devices: udids,
        name: `${DEV_IDENTITY_LABEL} ${userId}`,
        clock: deps.clock,
      });
      return { bytes: made.bytes, uuid: made.uuid, expiresAt: made.expirationDate };
    },
  };
}

const DAY_MS = 86_400_000;

export interface SigningServiceDeps {
  db: Database;
  clock: () => Date;
  /** The identity in use: the dev identity, or the first account of the pool. */
  identity: SigningIdentityProvider;
  /** Whose Registered devices a profile lists. */
  devices: Pick<DeviceService, 'registeredDevices'>;
  /** The certificates signed with and their OCSP status. */
  certificates: CertificateRegistry;
  /** RENEW_BEFORE_DAYS: a profile expiring sooner than this is made again at its next use. */
  renewBeforeMs: number;
  /**
   * With several developer accounts (account-pool.ts): the one a user's devices are on signs for
   * them, and a profile another account made is deleted there.
   */
  pool?: Pick<AccountPool, 'identityOf' | 'providerOf' | 'providers'> | undefined;
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

  async function materialFor(userId: string): Promise<SigningMaterial | undefined> {
    const signer = await signerOf(userId);
    if (!signer) return undefined;
    const { identity, accountId, udids } = signer;
    const { certificate, source } = await currentSigner(identity);
    const stored = await q.findUserProfile(db, userId);
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
    });
    // A profile cannot outlast its certificate: one that expires with it is as fresh as can be.
    const freshUntil =
      Math.min(clock().getTime() + Math.max(renewBeforeMs, DAY_MS), certificate.notAfter.getTime()) - 60_000;
    if (
      stored &&
      stored.accountId === accountId &&
      stored.expiresAt.getTime() >= freshUntil &&
      stored.udids.length === udids.length &&
      stored.udids.every((udid, i) => udid === udids[i])
    ) {
      const bytes = Buffer.from(stored.profile, 'base64');
      const listed =
        stored.certificateFingerprint === certificate.fingerprint
          ? [certificate.fingerprint]
          : profileCertificatesOf(bytes);
      if (listed.includes(certificate.fingerprint))
        return material(bytes, stored.uuid, stored.expiresAt, listed);
    }
    const made = await identity.makeProfile({ userId, udids });
    const listed = profileCertificatesOf(made.bytes);
    // Made for a certificate that was replaced meanwhile: the next use makes one for the new one.
    if (!listed.includes(certificate.fingerprint))
      throw new Error('The signing certificate changed while the profile was made; sign again.');
    await q.saveUserProfile(db, {
      userId,
      profile: made.bytes.toString('base64'),
      uuid: made.uuid,
      udids,
      appleProfileId: made.appleProfileId ?? null,
      accountId,
      certificateFingerprint: certificate.fingerprint,
      createdAt: clock(),
      expiresAt: made.expiresAt,
    });
    if (stored?.appleProfileId) {
      // Deleted where it was made: another account's, when the user's devices moved.
      const maker = stored.accountId === accountId ? identity : await pool?.providerOf(stored.accountId ?? 0);
      await maker?.dropProfile?.(stored.appleProfileId).catch(() => {});
    }
    return material(made.bytes, made.uuid, made.expiresAt, listed);
  }

  function signingMaterial(userId: string): Promise<SigningMaterial | undefined> {
    let pending = making.get(userId);
    if (!pending) {
      pending = materialFor(userId).finally(() => making.delete(userId));
      making.set(userId, pending);
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
