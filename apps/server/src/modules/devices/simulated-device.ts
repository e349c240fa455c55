/**
 * A simulated iPhone, for trying enrollment, registration, signing and installs without one
 * (`sideport device:simulate`, `npm run demo`, the tests). It behaves as iOS does with a Profile
 * Service .mobileconfig: reads the URL and challenge, and answers with its attributes as an XML
 * plist inside a CMS SignedData made with its device identity (docs/sign-service.md, "Enrollment").
 * That identity is issued by a local device CA instead of Apple's, so an answer passes the
 * server's signature check but not a DEVICE_CA_PEM chain check set to Apple's CA.
 */
import { randomBytes } from 'node:crypto';
import forge from 'node-forge';
import { buildXmlPlist, type PlistObject } from '@sideport/ipa';
import { readEnrollmentProfile } from './enrollment.js';
import { generateRsaKeyPair } from '../../platform/pki.js';

/** The model of a simulated device (an iPhone 14 Pro), recognisable in lists beside real ones. */
export const SIMULATED_PRODUCT = 'iPhone15,2';
export const SIMULATED_DEVICE_NAME = 'Simulated iPhone';
const SIMULATED_OS_BUILD = '21E236';

export interface Issued {
  cert: forge.pki.Certificate;
  key: forge.pki.rsa.PrivateKey;
  pem: string;
}

let serial = 1;

/** A certificate for `commonName`, issued by `issuer` (self-signed without one), a CA when `isCa`. */
export function issueCertificate(commonName: string, issuer?: Issued, isCa = false): Issued {
  const { privateKey: key, publicKey } = generateRsaKeyPair();
  const cert = forge.pki.createCertificate();
  cert.publicKey = publicKey;
  cert.serialNumber = (serial++).toString(16).padStart(2, '0');
  cert.validity.notBefore = new Date(Date.now() - 86_400_000);
  cert.validity.notAfter = new Date(Date.now() + 86_400_000);
  cert.setSubject([{ name: 'commonName', value: commonName }]);
  cert.setIssuer(issuer ? issuer.cert.subject.attributes : [{ name: 'commonName', value: commonName }]);
  cert.setExtensions(
    isCa
      ? [
          { name: 'basicConstraints', cA: true, critical: true },
          { name: 'keyUsage', keyCertSign: true, critical: true },
        ]
      : [],
  );
  cert.sign(issuer ? issuer.key : key, forge.md.sha256.create());
  return { cert, key, pem: forge.pki.certificateToPem(cert) };
}

/**
 * Signs as a device does (SHA-1, no signed attributes, the content inside) or, with `attributes`,
 * as most CMS tools do. The other options make the malformed answers the enrollment tests refuse.
 */
export function signDeviceAnswer(
  content: Buffer | string,
  signer: Issued,
  options: {
    attributes?: boolean;
    chain?: Issued[];
    key?: forge.pki.rsa.PrivateKey;
    withoutCertificate?: boolean;
    detached?: boolean;
  } = {},
): Buffer {
  const p7 = forge.pkcs7.createSignedData();
  p7.content = forge.util.createBuffer(Buffer.from(content).toString('binary'));
  if (!options.withoutCertificate) p7.addCertificate(signer.cert);
  for (const c of options.chain ?? []) p7.addCertificate(c.cert);
  p7.addSigner({
    key: options.key ?? signer.key,
    certificate: signer.cert,
    digestAlgorithm: options.attributes ? forge.pki.oids.sha256! : forge.pki.oids.sha1!,
    authenticatedAttributes: options.attributes
      ? [
          { type: forge.pki.oids.contentType!, value: forge.pki.oids.data! },
          { type: forge.pki.oids.messageDigest! },
        ]
      : [],
  });
  p7.sign({ detached: options.detached ?? false });
  return Buffer.from(forge.asn1.toDer(p7.toAsn1()).getBytes(), 'binary');
}

/** A UDID as iPhones since 2018 have them: 8 hex digits, a dash, 16 hex digits (upper case). */
export function randomUdid(random: (bytes: number) => Buffer = randomBytes): string {
  return `00008120-${random(8).toString('hex').toUpperCase()}`;
}

export interface SimulatedDeviceOptions {
  udid?: string;
  product?: string;
  deviceName?: string;
  /** The device identity; made by a new local device CA when absent. */
  identity?: Issued;
  random?: (bytes: number) => Buffer;
}

export interface SimulatedDevice {
  readonly udid: string;
  readonly product: string;
  readonly deviceName: string;
  /** What the device posts, and where, after installing `profile` (the .mobileconfig's bytes). */
  answer(profile: Buffer): { url: string; body: Buffer };
}

/** A device with a random UDID (unless given), ready to answer enrollment profiles. */
export function createSimulatedDevice(options: SimulatedDeviceOptions = {}): SimulatedDevice {
  const udid = options.udid ?? randomUdid(options.random);
  const product = options.product ?? SIMULATED_PRODUCT;
  const deviceName = options.deviceName ?? SIMULATED_DEVICE_NAME;
  let identity = options.identity;
  return {
    udid,
    product,
    deviceName,
    answer(profile) {
      // Apple's device certificates name the device by a UUID, issued by "Apple iPhone Device CA".
      identity ??= issueCertificate(udid, issueCertificate('Sideport Simulated Device CA', undefined, true));
      const { url, challenge } = readEnrollmentProfile(profile);
      const attributes: PlistObject = {
        CHALLENGE: challenge,
        DEVICE_NAME: deviceName,
        PRODUCT: product,
        SERIAL: `SIM${udid.replace(/-/g, '').slice(-9)}`,
        UDID: udid,
        VERSION: SIMULATED_OS_BUILD,
      };
      return { url, body: signDeviceAnswer(buildXmlPlist(attributes), identity) };
    },
  };
}
