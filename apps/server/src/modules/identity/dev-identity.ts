/**
 * The dev identity: what Sideport uses instead of an Apple developer account when no App Store
 * Connect key is configured. A local CA, a code-signing certificate it issued, and ad-hoc-style
 * provisioning profiles that Sideport signs itself. They run the whole pipeline (enroll, register,
 * sign, install manifest) but no real device installs what they sign: iOS trusts only Apple's
 * chain. Every name says so ("Sideport Dev (not Apple)"), so such a profile is never taken for
 * Apple's.
 */
import { randomBytes } from 'node:crypto';
import forge from 'node-forge';
import {
  buildXmlPlist,
  loadIdentity,
  type IdentitySource,
  type PlistObject,
  type SigningIdentity,
} from '@sideport/ipa';
import { certificateDer, generateRsaKeyPair, signAttachedCms, uuidFrom } from '../../platform/pki.js';

export const DEV_IDENTITY_LABEL = 'Sideport Dev (not Apple)';

/** Everything the dev identity is, as PEM text: the keys are for `SecretBox.seal` before storing. */
export interface DevIdentity {
  /** Ten characters, as Apple's team ids are; random per installation. */
  readonly teamId: string;
  readonly teamName: string;
  readonly caCertPem: string;
  readonly caKeyPem: string;
  readonly certPem: string;
  readonly keyPem: string;
}

export interface DevIdentityOptions {
  readonly clock?: () => Date;
  readonly random?: (bytes: number) => Buffer;
  /** How long the CA and the signing certificate stay valid. */
  readonly validYears?: number;
}

const DAY_MS = 86_400_000;
const TEAM_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ0123456789';

/** Makes a new dev identity: a CA and a code-signing certificate issued by it (RSA 2048, SHA-256). */
export function createDevIdentity(options: DevIdentityOptions & { teamId?: string } = {}): DevIdentity {
  const clock = options.clock ?? (() => new Date());
  const random = options.random ?? randomBytes;
  const years = options.validYears ?? 10;
  const now = clock();
  const teamId =
    options.teamId ?? [...random(10)].map((byte) => TEAM_ALPHABET[byte % TEAM_ALPHABET.length]).join('');
  const teamName = DEV_IDENTITY_LABEL;

  const caKeys = generateRsaKeyPair();
  const ca = forge.pki.createCertificate();
  ca.publicKey = caKeys.publicKey;
  ca.serialNumber = serialNumber(random);
  setValidity(ca, now, years);
  ca.setSubject(CA_SUBJECT);
  ca.setIssuer(CA_SUBJECT);
  ca.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  ca.sign(caKeys.privateKey, forge.md.sha256.create());

  const authority = {
    teamId,
    teamName,
    caCertPem: forge.pki.certificateToPem(ca),
    caKeyPem: caKeys.privateKeyPem,
  };
  return { ...authority, ...issueDevCertificate(authority, options) };
}

const CA_SUBJECT = [
  { name: 'commonName', value: `${DEV_IDENTITY_LABEL} CA` },
  { name: 'organizationName', value: DEV_IDENTITY_LABEL },
];

/**
 * A new code-signing certificate from the identity's own CA (what recovery makes in place of a
 * revoked or expiring one); it lasts `validYears`, and never past the CA.
 */
export function issueDevCertificate(
  authority: Pick<DevIdentity, 'teamId' | 'caCertPem' | 'caKeyPem'>,
  options: DevIdentityOptions & { purpose?: string } = {},
): Pick<DevIdentity, 'certPem' | 'keyPem'> {
  const random = options.random ?? randomBytes;
  const now = (options.clock ?? (() => new Date()))();
  const ca = forge.pki.certificateFromPem(authority.caCertPem);
  const leafKeys = generateRsaKeyPair();
  const leaf = forge.pki.createCertificate();
  leaf.publicKey = leafKeys.publicKey;
  leaf.serialNumber = serialNumber(random);
  setValidity(leaf, now, options.validYears ?? 10);
  if (leaf.validity.notAfter > ca.validity.notAfter) leaf.validity.notAfter = ca.validity.notAfter;
  // Apple's distribution certificates read "Apple Distribution: Name (TEAMID)" with the team as OU.
  leaf.setSubject([
    {
      name: 'commonName',
      value: `${DEV_IDENTITY_LABEL}: ${options.purpose ?? 'Sideport'} (${authority.teamId})`,
    },
    { name: 'organizationalUnitName', value: authority.teamId },
    { name: 'organizationName', value: DEV_IDENTITY_LABEL },
  ]);
  leaf.setIssuer(CA_SUBJECT);
  leaf.setExtensions([
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, critical: true },
    { name: 'extKeyUsage', codeSigning: true, critical: true },
    { name: 'subjectKeyIdentifier' },
    { name: 'authorityKeyIdentifier', keyIdentifier: ca.generateSubjectKeyIdentifier().getBytes() },
  ]);
  leaf.sign(forge.pki.privateKeyFromPem(authority.caKeyPem), forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(leaf), keyPem: leafKeys.privateKeyPem };
}

/**
 * The identity with a new certificate in place of its current one: from the same CA while the CA
 * outlives the new certificate by `renewBeforeMs`, otherwise a new CA too (same team), so that a
 * renewal is never itself about to expire.
 */
export function renewDevIdentity(
  identity: DevIdentity,
  options: DevIdentityOptions & { renewBeforeMs: number },
): DevIdentity {
  const now = (options.clock ?? (() => new Date()))().getTime();
  const caEnds = forge.pki.certificateFromPem(identity.caCertPem).validity.notAfter.getTime();
  if (caEnds - now > 2 * options.renewBeforeMs + DAY_MS)
    return { ...identity, ...issueDevCertificate(identity, options) };
  return createDevIdentity({ ...options, teamId: identity.teamId });
}

/** The identity as `sign` from @sideport/ipa takes it: the certificate, its key and the dev CA. */
export function devIdentitySource(identity: DevIdentity): IdentitySource {
  return {
    certPem: identity.certPem,
    keyPem: identity.keyPem,
    chain: [Buffer.from(identity.caCertPem, 'utf8')],
  };
}

export function devSigningIdentity(identity: DevIdentity): SigningIdentity {
  return loadIdentity(devIdentitySource(identity));
}

export interface DevProfileRequest {
  /** UDIDs of the devices the profile lets install. */
  readonly devices: readonly string[];
  /** Shown in Settings and the admin console; says it is not Apple's unless given otherwise. */
  readonly name?: string;
  readonly clock?: () => Date;
  readonly random?: (bytes: number) => Buffer;
  /** Apple's ad-hoc profiles last a year; capped at the signing certificate's own expiry. */
  readonly validDays?: number;
}

export interface MadeProfile {
  /** The .mobileprovision file (CMS SignedData around the plist). */
  readonly bytes: Buffer;
  readonly name: string;
  readonly uuid: string;
  readonly expirationDate: Date;
}

/** An ad-hoc-style wildcard profile for `devices`, signed by the dev identity's own certificate. */
export function createDevProfile(identity: DevIdentity, request: DevProfileRequest): MadeProfile {
  const signer = devSigningIdentity(identity);
  const now = truncateToSecond((request.clock ?? (() => new Date()))());
  const validDays = request.validDays ?? 365;
  const expirationDate = new Date(
    Math.min(
      now.getTime() + validDays * DAY_MS,
      truncateToSecond(signer.certificate.validity.notAfter).getTime(),
    ),
  );
  const uuid = uuidFrom((request.random ?? randomBytes)(16));
  const name = request.name ?? `${DEV_IDENTITY_LABEL} Ad Hoc ${now.toISOString().slice(0, 10)}`;
  const bytes = buildProvisioningProfile({
    signer,
    name,
    uuid,
    appIdName: `${DEV_IDENTITY_LABEL} Wildcard`,
    teamId: identity.teamId,
    teamName: identity.teamName,
    devices: request.devices,
    developerCertificates: [certificateDer(signer.certificate)],
    creationDate: now,
    expirationDate,
  });
  return { bytes, name, uuid, expirationDate };
}

export interface ProvisioningProfileContent {
  /** Who signs the profile (Apple signs real ones with its own profile-signing certificate). */
  readonly signer: SigningIdentity;
  readonly name: string;
  readonly uuid: string;
  readonly appIdName: string;
  readonly teamId: string;
  readonly teamName: string;
  readonly devices: readonly string[];
  /** DER of each certificate allowed to sign with this profile. */
  readonly developerCertificates: readonly Buffer[];
  readonly creationDate: Date;
  readonly expirationDate: Date;
  /** 'iOS' unless told otherwise. */
  readonly platforms?: readonly string[];
  /** The App ID's identifier after the team prefix; '*' (a wildcard) unless told otherwise. */
  readonly bundleIdentifier?: string;
  /** What the App ID's enabled capabilities grant, besides the keys every profile carries. */
  readonly entitlements?: PlistObject;
}

/**
 * An ad-hoc provisioning profile with the keys Apple's carry (see an Apple-signed .mobileprovision
 * decoded with `security cms -D`): application-identifier 'TEAM.*' for a wildcard App ID, and
 * get-task-allow false, as distribution (not development) profiles have.
 */
export function buildProvisioningProfile(content: ProvisioningProfileContent): Buffer {
  const creationDate = truncateToSecond(content.creationDate);
  const expirationDate = truncateToSecond(content.expirationDate);
  const applicationIdentifier = `${content.teamId}.${content.bundleIdentifier ?? '*'}`;
  const plist: PlistObject = {
    AppIDName: content.appIdName,
    ApplicationIdentifierPrefix: [content.teamId],
    CreationDate: creationDate,
    Platform: [...(content.platforms ?? ['iOS'])],
    IsXcodeManaged: false,
    DeveloperCertificates: content.developerCertificates.map((der) => Buffer.from(der)),
    Entitlements: {
      'application-identifier': applicationIdentifier,
      'keychain-access-groups': [`${content.teamId}.*`],
      'get-task-allow': false,
      'com.apple.developer.team-identifier': content.teamId,
      ...content.entitlements,
    },
    ExpirationDate: expirationDate,
    Name: content.name,
    ProvisionedDevices: [...content.devices],
    TeamIdentifier: [content.teamId],
    TeamName: content.teamName,
    TimeToLive: Math.max(1, Math.round((expirationDate.getTime() - creationDate.getTime()) / DAY_MS)),
    UUID: content.uuid,
    Version: 1,
  };
  return signAttachedCms(Buffer.from(buildXmlPlist(plist), 'utf8'), content.signer, creationDate);
}

/** A positive serial of 16 random bytes (RFC 5280: positive, at most 20 octets). */
function serialNumber(random: (bytes: number) => Buffer): string {
  const bytes = Buffer.from(random(16));
  bytes[0] = (bytes[0]! & 0x7f) | 0x01;
  return bytes.toString('hex');
}

function setValidity(cert: forge.pki.Certificate, now: Date, years: number): void {
  // An hour back, so a device or verifier whose clock runs a little behind accepts it at once.
  cert.validity.notBefore = new Date(truncateToSecond(now).getTime() - 3_600_000);
  const notAfter = truncateToSecond(now);
  notAfter.setUTCFullYear(notAfter.getUTCFullYear() + years);
  cert.validity.notAfter = notAfter;
}

function truncateToSecond(date: Date): Date {
  return new Date(Math.floor(date.getTime() / 1000) * 1000);
}
