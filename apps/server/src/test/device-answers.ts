/**
 * Device-style enrollment answers for tests: a throwaway device CA, the certificates it issues, and
 * CMS signatures over attribute plists made the way devices make them (node-forge).
 */
import forge from 'node-forge';
import { buildXmlPlist, type PlistObject } from '@sideport/ipa';
import { generateRsaKeyPair } from '../modules/devices/pki.js';

export interface Issued {
  cert: forge.pki.Certificate;
  key: forge.pki.rsa.PrivateKey;
  pem: string;
}

let serial = 1;

/** A certificate for `commonName`, issued by `issuer` (self-signed without one), a CA when `isCa`. */
export function issue(commonName: string, issuer?: Issued, isCa = false): Issued {
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

/** A PKCS#12 of an issued certificate and its key (3DES, as openssl and Keychain export). */
export function p12Of(identity: Issued, password: string): Buffer {
  const asn1 = forge.pkcs12.toPkcs12Asn1(identity.key, [identity.cert], password, { algorithm: '3des' });
  return Buffer.from(forge.asn1.toDer(asn1).getBytes(), 'binary');
}

/** Signs as a device does (SHA-1, no signed attributes) or, with `attributes`, as most CMS tools do. */
export function signAnswer(
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

export const APPLE_DOCTYPE =
  '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">';

/** What an iPhone answers the Profile Service with (CHALLENGE is the profile's). */
export const ATTRIBUTES = {
  CHALLENGE: 'one-time-token-0123456789',
  DEVICE_NAME: 'Ana’s iPhone',
  PRODUCT: 'iPhone15,2',
  SERIAL: 'F2LXK0ABCDEF',
  UDID: '00008120-001A2B3C4D5E6F70',
  VERSION: '21E236',
};

export const devicePlist = (fields: PlistObject = ATTRIBUTES) => buildXmlPlist(fields);

/** The "billion laughs" entity expansion, in a plist whose UDID expands to 10^9 'lol's. */
export function billionLaughs(): string {
  const entities = [
    '<!ENTITY lol "lol">',
    ...Array.from({ length: 9 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i === 0 ? '' : i};`.repeat(10)}">`),
  ];
  return `<?xml version="1.0"?>\n<!DOCTYPE plist [\n${entities.join('\n')}\n]>\n<plist version="1.0"><dict><key>UDID</key><string>&lol9;</string></dict></plist>`;
}
