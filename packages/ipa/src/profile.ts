import forge from 'node-forge';
import { IpaError } from './errors.js';
import { isBinaryPlist, isPlistDict, parsePlistDict, type PlistObject, type PlistValue } from './plist.js';

export interface DeveloperCertificate {
  /** The certificate exactly as the profile lists it (DER). */
  readonly der: Buffer;
  /** Parsed when node-forge can (RSA keys); undefined for certificates it cannot read. */
  readonly certificate?: forge.pki.Certificate;
  readonly sha1Fingerprint: string;
  readonly commonName?: string;
}

export interface Profile {
  readonly name: string;
  readonly uuid: string;
  readonly teamId: string;
  readonly teamName: string;
  readonly appIdName: string;
  /** 'TEAMID.com.example.app' or a wildcard 'TEAMID.*'. */
  readonly applicationIdentifier: string;
  readonly entitlements: PlistObject;
  readonly provisionedDevices: readonly string[];
  /** Enterprise (in-house) profiles run on any device. */
  readonly provisionsAllDevices: boolean;
  readonly platforms: readonly string[];
  readonly creationDate: Date;
  readonly expirationDate: Date;
  readonly developerCertificates: readonly DeveloperCertificate[];
  /** Whether the plist came wrapped in a CMS signature (as Apple ships them) or bare. */
  readonly isSigned: boolean;
  isExpired(now: Date): boolean;
}

/**
 * Parses an `embedded.mobileprovision`: a CMS SignedData (RFC 5652) whose encapsulated content is
 * an XML plist. The signature is not verified here; the device does that on install. A bare XML
 * or binary plist is accepted too (profiles as some tools save them).
 */
export function parseProfile(bytes: Buffer): Profile {
  const isSigned = !looksLikePlist(bytes);
  const plistBytes = isSigned ? extractSignedContent(bytes) : bytes;
  let dict: PlistObject;
  try {
    dict = parsePlistDict(plistBytes, 'the provisioning profile');
  } catch (err) {
    throw new IpaError('PROFILE_INVALID', (err as Error).message, { cause: err });
  }
  return describeProfile(dict, isSigned);
}

export function isProfileExpired(profile: Pick<Profile, 'expirationDate'>, now: Date): boolean {
  return profile.expirationDate.getTime() <= now.getTime();
}

/** Refuses a profile that cannot sign with this certificate today. */
export function assertProfileUsable(profile: Profile, certificate: forge.pki.Certificate, now: Date): void {
  if (isProfileExpired(profile, now)) {
    throw new IpaError(
      'PROFILE_EXPIRED',
      `Expected a provisioning profile valid on ${now.toISOString()}, found "${profile.name}" which expired on ${profile.expirationDate.toISOString()}.`,
    );
  }
  const der = Buffer.from(forge.asn1.toDer(forge.pki.certificateToAsn1(certificate)).getBytes(), 'binary');
  if (!profile.developerCertificates.some((listed) => listed.der.equals(der))) {
    const name = certificate.subject.getField('CN')?.value ?? 'without a common name';
    throw new IpaError(
      'CERTIFICATE_NOT_IN_PROFILE',
      `Expected the signing certificate "${name}" to be one of the ${profile.developerCertificates.length} ` +
        `developer certificates in "${profile.name}", found it is not: sign with a certificate the profile lists or regenerate the profile.`,
    );
  }
}

function looksLikePlist(bytes: Buffer): boolean {
  if (isBinaryPlist(bytes)) return true;
  const start = bytes
    .subarray(0, 64)
    .toString('utf8')
    .replace(/^\uFEFF/, '')
    .trimStart();
  return start.startsWith('<');
}

function extractSignedContent(bytes: Buffer): Buffer {
  try {
    const asn1 = forge.asn1.fromDer(forge.util.createBuffer(bytes.toString('binary')));
    const message = forge.pkcs7.messageFromAsn1(asn1) as forge.pkcs7.PkcsSignedData & {
      rawCapture?: { content?: forge.asn1.Asn1 };
    };
    const content = message.rawCapture?.content;
    if (content === undefined) throw new Error('the SignedData has no encapsulated content');
    return Buffer.from(concatOctets(content), 'binary');
  } catch (err) {
    const found = bytes.length === 0 ? 'an empty file' : `bytes 0x${bytes.subarray(0, 4).toString('hex')}`;
    throw new IpaError(
      'PROFILE_INVALID',
      `Expected a provisioning profile (CMS SignedData or plist), found ${found} that do not parse: ${(err as Error).message}.`,
      { cause: err },
    );
  }
}

/** eContent is `[0] EXPLICIT OCTET STRING`; BER allows the OCTET STRING in constructed chunks. */
function concatOctets(node: forge.asn1.Asn1): string {
  if (typeof node.value === 'string') return node.value;
  return node.value.map(concatOctets).join('');
}

function describeProfile(dict: PlistObject, isSigned: boolean): Profile {
  const entitlements = dict['Entitlements'];
  if (!isPlistDict(entitlements)) throw missing('Entitlements', 'a dictionary');
  const applicationIdentifier = entitlements['application-identifier'];
  if (typeof applicationIdentifier !== 'string')
    throw missing("Entitlements['application-identifier']", 'a string');
  const teamId = stringArray(dict, 'TeamIdentifier')[0];
  if (teamId === undefined) throw missing('TeamIdentifier', 'a list of strings');
  const expirationDate = requireDate(dict, 'ExpirationDate');
  return {
    name: requireString(dict, 'Name'),
    uuid: requireString(dict, 'UUID'),
    teamId,
    teamName: optionalString(dict, 'TeamName'),
    appIdName: optionalString(dict, 'AppIDName'),
    applicationIdentifier,
    entitlements,
    provisionedDevices: stringArray(dict, 'ProvisionedDevices'),
    provisionsAllDevices: dict['ProvisionsAllDevices'] === true,
    platforms: stringArray(dict, 'Platform'),
    creationDate: requireDate(dict, 'CreationDate'),
    expirationDate,
    developerCertificates: dataArray(dict, 'DeveloperCertificates').map(describeCertificate),
    isSigned,
    isExpired: (now: Date) => isProfileExpired({ expirationDate }, now),
  };
}

function describeCertificate(der: Buffer): DeveloperCertificate {
  const sha1Fingerprint = forge.md.sha1.create().update(der.toString('binary')).digest().toHex();
  try {
    const certificate = forge.pki.certificateFromAsn1(
      forge.asn1.fromDer(forge.util.createBuffer(der.toString('binary'))),
    );
    const commonName = certificate.subject.getField('CN')?.value as string | undefined;
    return { der, certificate, sha1Fingerprint, ...(commonName === undefined ? {} : { commonName }) };
  } catch {
    // Redacted test profiles and non-RSA keys end here; the DER still identifies the certificate.
    return { der, sha1Fingerprint };
  }
}

function missing(key: string, expected: string): IpaError {
  return new IpaError(
    'PROFILE_INVALID',
    `Expected the provisioning profile to have ${key} as ${expected}, found none.`,
  );
}

function requireString(dict: PlistObject, key: string): string {
  const value = dict[key];
  if (typeof value !== 'string') throw missing(key, 'a string');
  return value;
}

function optionalString(dict: PlistObject, key: string): string {
  const value = dict[key];
  return typeof value === 'string' ? value : '';
}

function requireDate(dict: PlistObject, key: string): Date {
  const value = dict[key];
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) throw missing(key, 'a date');
  return value;
}

function stringArray(dict: PlistObject, key: string): string[] {
  const value: PlistValue | undefined = dict[key];
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

function dataArray(dict: PlistObject, key: string): Buffer[] {
  const value: PlistValue | undefined = dict[key];
  if (!Array.isArray(value)) return [];
  return value.filter((item) => item instanceof Uint8Array).map((item) => Buffer.from(item));
}
