import { pbkdf2Sync } from 'node:crypto';
import forge from 'node-forge';
import { IpaError } from './errors.js';

export interface SigningIdentity {
  readonly certificate: forge.pki.Certificate;
  readonly privateKey: forge.pki.rsa.PrivateKey;
  /**
   * The leaf's issuers, nearest first (for an Apple identity: the WWDR intermediate, then Apple
   * Root CA), as far as the certificates at hand go. The CMS signature carries them so a verifier
   * can build the path without fetching anything, as codesign's signatures do.
   */
  readonly chain: readonly forge.pki.Certificate[];
}

export type IdentitySource = ({ p12: Buffer; password: string } | { certPem: string; keyPem: string }) & {
  /**
   * Operator-supplied issuer certificates (PEM, one or several per file, or DER), such as Apple's
   * WWDR intermediate and Apple Root CA, which a Keychain export of the identity usually lacks.
   */
  chain?: readonly Buffer[];
};

/** Loads a signing identity from a PKCS#12 export (Keychain, openssl) or a PEM certificate and key. */
export function loadIdentity(source: IdentitySource): SigningIdentity {
  const loaded =
    'p12' in source ? loadFromP12(source.p12, source.password) : loadFromPem(source.certPem, source.keyPem);
  const supplied = (source.chain ?? []).flatMap((bytes, index) =>
    readCertificates(bytes, `chain file ${index + 1}`),
  );
  return { ...loaded, chain: issuerChain(loaded.certificate, loaded.chain, supplied) };
}

/**
 * Orders the leaf's issuers, nearest first, from the certificates that came with it and those the
 * operator supplied. A supplied certificate that issues nothing in the chain is refused (it is a
 * wrong file); extra certificates inside a PKCS#12 are left out.
 */
function issuerChain(
  leaf: forge.pki.Certificate,
  bundled: readonly forge.pki.Certificate[],
  supplied: readonly forge.pki.Certificate[],
): forge.pki.Certificate[] {
  const pool = [...supplied, ...bundled];
  const chain: forge.pki.Certificate[] = [];
  let current = leaf;
  while (!isSelfIssued(current)) {
    const issuer = pool.find((candidate) => !chain.includes(candidate) && current.isIssuer(candidate));
    if (issuer === undefined) break;
    chain.push(issuer);
    current = issuer;
  }
  const fingerprints = new Set([leaf, ...chain].map(fingerprint));
  const stray = supplied.find((cert) => !fingerprints.has(fingerprint(cert)));
  if (stray !== undefined) {
    throw new IpaError(
      'IDENTITY_INVALID',
      `Expected the chain files to hold issuers of "${commonNameOf(leaf)}", found "${commonNameOf(stray)}", which issued none of its chain.`,
    );
  }
  return chain;
}

function isSelfIssued(cert: forge.pki.Certificate): boolean {
  // forge: child.isIssuer(parent) is true when parent's subject is child's issuer.
  return cert.isIssuer(cert);
}

function fingerprint(cert: forge.pki.Certificate): string {
  return forge.md.sha256
    .create()
    .update(forge.asn1.toDer(forge.pki.certificateToAsn1(cert)).getBytes())
    .digest()
    .toHex();
}

function commonNameOf(cert: forge.pki.Certificate): string {
  return (
    (cert.subject.getField('CN')?.value as string | undefined) ??
    cert.subject.attributes.map((a) => `${a.shortName}=${a.value}`).join(', ')
  );
}

/** Certificates from a PEM file (every CERTIFICATE block) or a single DER certificate. */
function readCertificates(bytes: Buffer, what: string): forge.pki.Certificate[] {
  const text = bytes.toString('latin1');
  try {
    if (text.includes('-----BEGIN')) {
      const blocks = forge.pem.decode(text).filter((block) => block.type === 'CERTIFICATE');
      if (blocks.length === 0) throw new Error('no CERTIFICATE block');
      return blocks.map((block) => forge.pki.certificateFromAsn1(forge.asn1.fromDer(block.body)));
    }
    return [forge.pki.certificateFromAsn1(forge.asn1.fromDer(forge.util.createBuffer(text)))];
  } catch (err) {
    throw new IpaError(
      'IDENTITY_INVALID',
      `Expected ${what} to be a certificate in PEM or DER, found one that does not parse: ${(err as Error).message}.`,
      {
        cause: err,
      },
    );
  }
}

const NATIVE_PBKDF2_HASHES = new Set(['sha1', 'sha256', 'sha384', 'sha512']);

/**
 * node-forge's PBKDF2, done by OpenSSL when it is asked synchronously for a hash Node knows. A
 * p12 from OpenSSL 3 or a recent Keychain (PBES2, 2,048 rounds of HMAC-SHA-256 per bag) otherwise
 * costs some 70 ms of JavaScript hashing each time an identity is opened, once per sign job. The
 * bytes are forge's: its strings hold one byte per character ('binary').
 */
export function withNativePbkdf2(js: typeof forge.pkcs5.pbkdf2): typeof forge.pkcs5.pbkdf2 {
  return function pbkdf2(this: unknown, ...args: unknown[]) {
    const [password, salt, iterations, keyLength, md, callback] = args as [
      string,
      string,
      number,
      number,
      string | { algorithm?: string } | undefined,
      unknown,
    ];
    const hash = typeof md === 'object' && md !== null ? md.algorithm : (md ?? 'sha1');
    if (callback !== undefined || hash === undefined || !NATIVE_PBKDF2_HASHES.has(hash))
      return (js as (...a: unknown[]) => unknown).apply(this, args);
    return pbkdf2Sync(
      Buffer.from(password, 'binary'),
      Buffer.from(salt, 'binary'),
      iterations,
      keyLength,
      hash,
    ).toString('binary');
  } as typeof forge.pkcs5.pbkdf2;
}

function loadFromP12(bytes: Buffer, password: string): SigningIdentity {
  let asn1: forge.asn1.Asn1;
  try {
    asn1 = forge.asn1.fromDer(forge.util.createBuffer(bytes.toString('binary')));
  } catch (err) {
    const found = bytes.length === 0 ? 'an empty file' : `bytes 0x${bytes.subarray(0, 4).toString('hex')}`;
    throw new IpaError('P12_INVALID', `Expected a PKCS#12 (.p12) file, found ${found} that are not DER.`, {
      cause: err,
    });
  }
  let p12: forge.pkcs12.Pkcs12Pfx;
  const jsPbkdf2 = forge.pkcs5.pbkdf2;
  try {
    forge.pkcs5.pbkdf2 = withNativePbkdf2(jsPbkdf2);
    p12 = forge.pkcs12.pkcs12FromAsn1(asn1, false, password);
  } catch (err) {
    const message = (err as Error).message;
    if (/MAC could not be verified|Invalid password/i.test(message)) {
      throw new IpaError(
        'P12_INVALID',
        'The PKCS#12 file could not be opened with this password: check the password it was exported with.',
        {
          cause: err,
        },
      );
    }
    throw new IpaError(
      'P12_INVALID',
      `Expected a PKCS#12 (.p12) file node-forge can read, found one that fails: ${message}.`,
      {
        cause: err,
      },
    );
  } finally {
    forge.pkcs5.pbkdf2 = jsPbkdf2;
  }
  const oids = forge.pki.oids as Record<'certBag' | 'pkcs8ShroudedKeyBag' | 'keyBag', string>;
  const certificates = bagsOf(p12, oids.certBag)
    .map((bag) => bag.cert)
    .filter((cert): cert is forge.pki.Certificate => cert !== undefined);
  // forge decrypts shrouded keys into bag.key; non-RSA keys stay undefined.
  const keys = [...bagsOf(p12, oids.pkcs8ShroudedKeyBag), ...bagsOf(p12, oids.keyBag)]
    .map((bag) => bag.key as forge.pki.rsa.PrivateKey | undefined)
    .filter((key): key is forge.pki.rsa.PrivateKey => key !== undefined && key !== null);
  const privateKey = keys[0];
  if (privateKey === undefined) {
    throw new IpaError(
      'P12_INVALID',
      `Expected a PKCS#12 file with an RSA private key, found ${certificates.length} certificate(s) and no key node-forge can read (export the identity with its key).`,
    );
  }
  return pairUp(certificates, privateKey, 'P12_INVALID');
}

function loadFromPem(certPem: string, keyPem: string): SigningIdentity {
  let certificates: forge.pki.Certificate[];
  let privateKey: forge.pki.rsa.PrivateKey;
  try {
    certificates = forge.pem
      .decode(certPem)
      .filter((block) => block.type === 'CERTIFICATE')
      .map((block) => forge.pki.certificateFromAsn1(forge.asn1.fromDer(block.body)));
  } catch (err) {
    throw new IpaError(
      'IDENTITY_INVALID',
      `Expected PEM certificates, found text that does not parse: ${(err as Error).message}.`,
      {
        cause: err,
      },
    );
  }
  try {
    privateKey = forge.pki.privateKeyFromPem(keyPem) as forge.pki.rsa.PrivateKey;
  } catch (err) {
    throw new IpaError(
      'IDENTITY_INVALID',
      `Expected an unencrypted RSA private key in PEM, found one that does not parse: ${(err as Error).message}.`,
      {
        cause: err,
      },
    );
  }
  return pairUp(certificates, privateKey, 'IDENTITY_INVALID');
}

/** The leaf is the certificate whose public key belongs to the private key; the rest is the chain. */
function pairUp(
  certificates: forge.pki.Certificate[],
  privateKey: forge.pki.rsa.PrivateKey,
  code: 'P12_INVALID' | 'IDENTITY_INVALID',
): SigningIdentity {
  if (privateKey === undefined || privateKey === null || privateKey.n === undefined) {
    throw new IpaError(code, 'Expected an RSA private key, found none.');
  }
  const matches = (cert: forge.pki.Certificate): boolean => {
    const publicKey = cert.publicKey as forge.pki.rsa.PublicKey;
    return publicKey.n !== undefined && publicKey.n.equals(privateKey.n) && publicKey.e.equals(privateKey.e);
  };
  if (certificates.length === 0) {
    throw new IpaError(code, 'Expected a certificate beside the private key, found none.');
  }
  const certificate = certificates.find(matches);
  if (certificate === undefined) {
    throw new IpaError(
      code,
      `Expected a certificate matching the private key, found ${certificates.length} certificate(s) for other keys.`,
    );
  }
  return { certificate, privateKey, chain: certificates.filter((cert) => cert !== certificate) };
}

function bagsOf(p12: forge.pkcs12.Pkcs12Pfx, bagType: string): forge.pkcs12.Bag[] {
  return p12.getBags({ bagType })[bagType] ?? [];
}
