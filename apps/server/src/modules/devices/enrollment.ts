/**
 * UDID enrollment through Apple's Profile Service ("Over-the-Air Profile Delivery and
 * Configuration"): Sideport hands out a .mobileconfig whose payload asks the device for its
 * attributes; the device POSTs them back to the payload's URL as a CMS SignedData around an XML
 * plist, signed with its Apple-issued device identity.
 *
 * Building the profile is node-forge (signing); checking the answer is pkijs (node-forge cannot
 * verify CMS signatures). Token lifetime, replay and storage are the caller's: the challenge is
 * only read and returned.
 */
import { randomBytes, webcrypto } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import {
  buildXmlPlist,
  isIpaError,
  loadIdentity,
  parsePlistDict,
  type PlistObject,
  type SigningIdentity,
} from '@sideport/ipa';
import { AppError, fail, failWith } from '../../platform/errors.js';
import { signAttachedCms, uuidFrom } from '../../platform/pki.js';
import { canonicalUdid } from './udid.js';

export const MOBILECONFIG_CONTENT_TYPE = 'application/x-apple-aspen-config';
/** What the device is asked for (docs/sign-service.md). */
export const DEVICE_ATTRIBUTES = ['UDID', 'PRODUCT', 'VERSION', 'SERIAL', 'DEVICE_NAME'] as const;

export interface EnrollmentProfileRequest {
  /** The one-time URL the device POSTs its answer to (https for real devices). */
  readonly url: string;
  /** Echoed back by the device as CHALLENGE. */
  readonly challenge: string;
  readonly organization?: string;
  readonly displayName?: string;
  readonly description?: string;
  /** Reverse-DNS PayloadIdentifier. */
  readonly identifier?: string;
  /** Signs the profile (the operator's PROFILE_SIGNING_P12, see loadProfileSigner); unsigned when absent. */
  readonly signer?: SigningIdentity;
  readonly clock?: () => Date;
  readonly random?: (bytes: number) => Buffer;
}

/**
 * The Profile Service .mobileconfig (MOBILECONFIG_CONTENT_TYPE): an XML plist, or with `signer`
 * the same plist inside a CMS SignedData with the content included, which iOS shows as "Verified"
 * when the operator's certificate chains to a root it trusts.
 */
export function buildEnrollmentProfile(request: EnrollmentProfileRequest): Buffer {
  const random = request.random ?? randomBytes;
  const organization = request.organization ?? 'Sideport';
  const profile: PlistObject = {
    PayloadContent: {
      URL: request.url,
      DeviceAttributes: [...DEVICE_ATTRIBUTES],
      Challenge: request.challenge,
    },
    PayloadOrganization: organization,
    PayloadDisplayName: request.displayName ?? `${organization} device enrollment`,
    PayloadDescription:
      request.description ??
      `Sends this device's UDID, model and name to ${organization} so apps can be signed for it. Nothing is installed.`,
    PayloadVersion: 1,
    PayloadUUID: uuidFrom(random(16)),
    PayloadIdentifier: request.identifier ?? 'app.sideport.enrollment',
    PayloadType: 'Profile Service',
  };
  const xml = Buffer.from(buildXmlPlist(profile), 'utf8');
  return request.signer === undefined
    ? xml
    : signAttachedCms(xml, request.signer, (request.clock ?? (() => new Date()))());
}

/** The operator's profile-signing identity from PROFILE_SIGNING_P12 (+ password, + optional issuer certificates). */
export function loadProfileSigner(
  p12: Buffer,
  password: string,
  chain: readonly Buffer[] = [],
): SigningIdentity {
  try {
    return loadIdentity({ p12, password, chain });
  } catch (err) {
    if (!isIpaError(err)) throw err;
    throw failWith('PROFILE_SIGNING_P12_INVALID', { cause: err }, err.message);
  }
}

// ---------------------------------------------------------------------------------------------
// The device's answer

export type EnrollmentRefusal =
  | 'ENROLLMENT_TOO_LARGE'
  | 'ENROLLMENT_UNSIGNED'
  | 'ENROLLMENT_MALFORMED'
  | 'ENROLLMENT_SIGNER_UNKNOWN'
  | 'ENROLLMENT_TAMPERED'
  | 'ENROLLMENT_SIGNATURE_INVALID'
  | 'ENROLLMENT_SIGNER_UNTRUSTED'
  | 'ENROLLMENT_PLIST_UNSAFE'
  | 'ENROLLMENT_PLIST_INVALID'
  | 'ENROLLMENT_FIELDS_MISSING';

/** A refused device answer: `code` is the reason, the message a sentence for the log or the device. */
export class EnrollmentError extends AppError {
  declare readonly code: EnrollmentRefusal;
  constructor(code: EnrollmentRefusal, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'EnrollmentError';
  }
}

export function isEnrollmentError(err: unknown): err is EnrollmentError {
  return err instanceof EnrollmentError;
}

export interface EnrolledDevice {
  readonly udid: string;
  /** Model identifier: 'iPhone15,2', 'iPad13,4', 'Mac14,2'. */
  readonly product: string;
  /** OS build: '21E236'. */
  readonly version: string;
  readonly serial?: string;
  readonly deviceName?: string;
  /** As the device echoed it; the caller matches it to the one-time token. */
  readonly challenge: string;
  /** The signing certificate's subject, as 'CN=...'. */
  readonly signerSubject: string;
  /** True when the signer was checked to chain to a configured device CA. */
  readonly chainVerified: boolean;
}

export interface EnrollmentAnswerOptions {
  /**
   * Certificates (PEM text, one or several) the signer must chain to, such as Apple's "Apple
   * iPhone Device CA"; when absent only the signature is checked.
   */
  readonly deviceCaPem?: string;
  /** Larger bodies are refused before parsing; real answers are about 5 KB. */
  readonly maxBytes?: number;
}

export const ENROLLMENT_ANSWER_MAX_BYTES = 64 * 1024;
const MAX_FIELD_LENGTH = 256;
const MAX_CHAIN_DEPTH = 6;
const OID_SIGNED_DATA = '1.2.840.113549.1.7.2';
// The only DOCTYPE a plist may carry: Apple's public one, with no internal subset (so no entities).
const APPLE_PLIST_DOCTYPE =
  /^<!DOCTYPE\s+plist\s+PUBLIC\s+"-\/\/Apple\/\/DTD PLIST 1\.0\/\/EN"\s+"http:\/\/www\.apple\.com\/DTDs\/PropertyList-1\.0\.dtd"\s*>$/;
// UDIDs: 40 hex digits (to 2018), 8-16 hex digits with a dash (since), or a UUID (Macs).
const UDID_PATTERN =
  /^(?:[0-9A-Fa-f]{40}|[0-9A-Fa-f]{8}-[0-9A-Fa-f]{16}|[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12})$/;

const engine = new pkijs.CryptoEngine({ name: 'node', crypto: webcrypto as unknown as Crypto });

/**
 * Reads and checks the device's POST body. Refusals are EnrollmentError with one code per reason;
 * a returned device has a valid signature over exactly the fields returned.
 */
export async function parseEnrollmentAnswer(
  body: Buffer,
  options: EnrollmentAnswerOptions = {},
): Promise<EnrolledDevice> {
  const maxBytes = options.maxBytes ?? ENROLLMENT_ANSWER_MAX_BYTES;
  if (body.length > maxBytes) {
    throw new EnrollmentError(
      'ENROLLMENT_TOO_LARGE',
      `The device answer is ${body.length} bytes; at most ${maxBytes} are accepted.`,
    );
  }
  if (looksLikePlist(body)) {
    throw new EnrollmentError(
      'ENROLLMENT_UNSIGNED',
      'The device answer is a bare property list; a device signs its answer.',
    );
  }
  const signed = readSignedData(body);
  if (signed.signerInfos.length === 0) {
    throw new EnrollmentError('ENROLLMENT_UNSIGNED', 'The device answer is a SignedData without any signer.');
  }
  const content = signed.encapContentInfo.eContent;
  if (content === undefined) {
    throw new EnrollmentError(
      'ENROLLMENT_MALFORMED',
      'The device answer carries no content (a detached signature).',
    );
  }
  const signer = await verifySignature(signed);
  const chainVerified =
    options.deviceCaPem === undefined
      ? false
      : await verifyChain(signer, signed, readPemCertificates(options.deviceCaPem));
  const fields = readFields(Buffer.from(content.getValue()));
  return { ...fields, signerSubject: describeName(signer.subject), chainVerified };
}

/**
 * What a device reads from a Profile Service .mobileconfig, bare or signed by the operator: the URL
 * to answer and the challenge to echo (the simulated device of simulated-device.ts reads it so).
 */
export function readEnrollmentProfile(profile: Buffer): { url: string; challenge: string } {
  const xml = looksLikePlist(profile) ? profile : signedContentOf(profile);
  const content = parsePlistDict(xml, 'the device profile')['PayloadContent'] as
    { URL?: unknown; Challenge?: unknown } | undefined;
  if (typeof content?.URL !== 'string' || typeof content.Challenge !== 'string') {
    throw new EnrollmentError(
      'ENROLLMENT_MALFORMED',
      'The device profile names no enrollment URL and challenge.',
    );
  }
  return { url: content.URL, challenge: content.Challenge };
}

function signedContentOf(profile: Buffer): Buffer {
  const content = readSignedData(profile).encapContentInfo.eContent;
  if (content === undefined)
    throw new EnrollmentError('ENROLLMENT_MALFORMED', 'The signed device profile carries no content.');
  return Buffer.from(content.getValue());
}

function looksLikePlist(body: Buffer): boolean {
  const head = body
    .subarray(0, 64)
    .toString('utf8')
    .replace(/^\uFEFF/, '')
    .trimStart();
  return head.startsWith('<') || head.startsWith('bplist');
}

function readSignedData(body: Buffer): pkijs.SignedData {
  const malformed = (why: string, cause?: unknown) =>
    new EnrollmentError('ENROLLMENT_MALFORMED', `The device answer is not a CMS signed message: ${why}.`, {
      cause,
    });
  if (body.length === 0) throw malformed('it is empty');
  const view = new Uint8Array(body.buffer, body.byteOffset, body.length);
  const parsed = asn1js.fromBER(view);
  if (parsed.offset === -1) throw malformed(parsed.result.error || 'its DER does not parse');
  if (parsed.offset !== body.length)
    throw malformed(`${body.length - parsed.offset} bytes follow the message`);
  let info: pkijs.ContentInfo;
  try {
    info = new pkijs.ContentInfo({ schema: parsed.result });
  } catch (err) {
    throw malformed('it is not a ContentInfo', err);
  }
  if (info.contentType !== OID_SIGNED_DATA)
    throw malformed(`its content type is ${info.contentType}, not SignedData`);
  try {
    return new pkijs.SignedData({ schema: info.content });
  } catch (err) {
    throw malformed('its SignedData does not parse', err);
  }
}

async function verifySignature(signed: pkijs.SignedData): Promise<pkijs.Certificate> {
  let result: { signatureVerified?: boolean | null; signerCertificate?: pkijs.Certificate | null };
  try {
    result = await signed.verify({ signer: 0, extendedMode: true, checkChain: false }, engine);
  } catch (err) {
    if (!(err instanceof pkijs.SignedDataVerifyError)) throw err;
    // Codes are pkijs's: 1-3 no signer or certificate, 15 with this message a content digest mismatch.
    if (err.code === 2 || err.code === 3) {
      throw new EnrollmentError(
        'ENROLLMENT_SIGNER_UNKNOWN',
        'The device answer does not carry the certificate that signed it.',
        { cause: err },
      );
    }
    if (/digest doesn't match/i.test(err.message)) {
      throw new EnrollmentError(
        'ENROLLMENT_TAMPERED',
        'The device answer was changed after it was signed (its content digest does not match).',
        {
          cause: err,
        },
      );
    }
    throw new EnrollmentError(
      'ENROLLMENT_SIGNATURE_INVALID',
      `The device answer's signature cannot be checked: ${err.message}.`,
      { cause: err },
    );
  }
  if (result.signatureVerified !== true || !result.signerCertificate) {
    // Without signed attributes (as devices sign) a changed content and a wrong key look alike.
    throw new EnrollmentError(
      'ENROLLMENT_SIGNATURE_INVALID',
      "The device answer's signature does not match its content and signing certificate.",
    );
  }
  return result.signerCertificate;
}

/**
 * Walks from the signer up through the message's certificates to one of the configured CAs,
 * checking each signature. Validity dates are not checked: Apple's device CA chain expired years
 * ago (Apple iPhone Device CA in 2014) and devices still sign with certificates it issues.
 */
async function verifyChain(
  signer: pkijs.Certificate,
  signed: pkijs.SignedData,
  anchors: pkijs.Certificate[],
): Promise<true> {
  const pool = (signed.certificates ?? []).filter(
    (c): c is pkijs.Certificate => c instanceof pkijs.Certificate,
  );
  let current = signer;
  for (let depth = 0; depth < MAX_CHAIN_DEPTH; depth++) {
    for (const anchor of anchors) {
      if (current.issuer.isEqual(anchor.subject) && (await current.verify(anchor, engine).catch(() => false)))
        return true;
    }
    if (current.issuer.isEqual(current.subject)) break;
    let next: pkijs.Certificate | undefined;
    for (const candidate of pool) {
      if (
        candidate !== current &&
        current.issuer.isEqual(candidate.subject) &&
        (await current.verify(candidate, engine).catch(() => false))
      ) {
        next = candidate;
        break;
      }
    }
    if (next === undefined) break;
    current = next;
  }
  throw new EnrollmentError(
    'ENROLLMENT_SIGNER_UNTRUSTED',
    `The device answer is signed by "${describeName(signer.subject)}", which does not chain to the configured device CA.`,
  );
}

function readPemCertificates(pem: string): pkijs.Certificate[] {
  const blocks = [...pem.matchAll(/-----BEGIN CERTIFICATE-----([\s\S]*?)-----END CERTIFICATE-----/g)];
  const certificates = blocks.map((block) => {
    const der = Buffer.from(block[1]!.replace(/\s+/g, ''), 'base64');
    return pkijs.Certificate.fromBER(new Uint8Array(der.buffer, der.byteOffset, der.length));
  });
  if (certificates.length === 0) throw fail('DEVICE_CA_INVALID');
  return certificates;
}

function readFields(content: Buffer): Omit<EnrolledDevice, 'signerSubject' | 'chainVerified'> {
  assertSafeXml(content);
  let dict: PlistObject;
  try {
    dict = parsePlistDict(content, 'the device answer');
  } catch (err) {
    if (!isIpaError(err)) throw err;
    throw new EnrollmentError(
      'ENROLLMENT_PLIST_INVALID',
      `The device answer is not a usable property list (${err.message.replace(/\.$/, '')}).`,
      {
        cause: err,
      },
    );
  }
  const read = (key: string): string | undefined => {
    const value = dict[key];
    if (value === undefined) return undefined;
    if (typeof value !== 'string' || value.length > MAX_FIELD_LENGTH) {
      throw new EnrollmentError(
        'ENROLLMENT_PLIST_INVALID',
        `The device answer's ${key} is not a string of at most ${MAX_FIELD_LENGTH} characters.`,
      );
    }
    return value.trim() === '' ? undefined : value.trim();
  };
  const udid = read('UDID');
  const product = read('PRODUCT');
  const version = read('VERSION');
  const challenge = read('CHALLENGE');
  const missing = Object.entries({ UDID: udid, PRODUCT: product, VERSION: version, CHALLENGE: challenge })
    .filter(([, value]) => value === undefined)
    .map(([key]) => key);
  if (missing.length > 0) {
    throw new EnrollmentError('ENROLLMENT_FIELDS_MISSING', `The device answer lacks ${missing.join(', ')}.`);
  }
  if (!UDID_PATTERN.test(udid!)) {
    throw new EnrollmentError(
      'ENROLLMENT_PLIST_INVALID',
      `The device answer's UDID "${udid!.slice(0, 64)}" is not a device identifier.`,
    );
  }
  const serial = read('SERIAL');
  const deviceName = read('DEVICE_NAME');
  return {
    udid: canonicalUdid(udid!),
    product: product!,
    version: version!,
    challenge: challenge!,
    ...(serial === undefined ? {} : { serial }),
    ...(deviceName === undefined ? {} : { deviceName }),
  };
}

/**
 * Entity declarations are how XML bombs and external-entity reads start; a device's plist has
 * none, only Apple's public DOCTYPE. Anything else is refused before an XML parser sees it.
 */
function assertSafeXml(content: Buffer): void {
  const text = content.toString('utf8');
  const unsafe = (why: string) =>
    new EnrollmentError('ENROLLMENT_PLIST_UNSAFE', `The device answer's XML ${why}; it is refused unread.`);
  if (/<!ENTITY/i.test(text)) throw unsafe('declares entities');
  const doctypes = text.match(/<!DOCTYPE[^>]*>/gi) ?? [];
  if (/<!DOCTYPE/gi.test(text) && doctypes.length === 0) throw unsafe('has an unterminated DOCTYPE');
  if (doctypes.length > 1 || (doctypes.length === 1 && !APPLE_PLIST_DOCTYPE.test(doctypes[0]!))) {
    throw unsafe("has a DOCTYPE other than Apple's plist one");
  }
}

const NAME_OIDS: Record<string, string> = {
  '2.5.4.3': 'CN',
  '2.5.4.10': 'O',
  '2.5.4.11': 'OU',
  '2.5.4.6': 'C',
};

function describeName(name: pkijs.RelativeDistinguishedNames): string {
  return name.typesAndValues
    .filter((tv) => NAME_OIDS[tv.type] !== undefined)
    .map((tv) => `${NAME_OIDS[tv.type]}=${String(tv.value.valueBlock.value)}`)
    .join(', ');
}
