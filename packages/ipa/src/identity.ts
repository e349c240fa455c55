import { pbkdf2Sync, X509Certificate } from 'node:crypto';
import forge from 'node-forge';
import {
  appleCaCertificates,
  completeChain,
  nameOf,
  orderChain,
  readCertificates,
  type ChainOptions,
} from './chain.js';
import { IpaError } from './errors.js';

export interface SigningIdentity {
  readonly certificate: forge.pki.Certificate;
  readonly privateKey: forge.pki.rsa.PrivateKey;
  /**
   * The leaf's issuers, nearest first (for an Apple identity: the WWDR intermediate, then Apple
   * Root CA), as far as the certificates at hand go: the .p12's, those supplied, and Apple's
   * shipped CA certificates (chain.ts). The CMS signature carries them so a device can build the
   * path without fetching anything, as codesign's signatures do; createCmsSigner refuses an
   * identity whose chain stops short of a root.
   */
  readonly chain: readonly X509Certificate[];
}

export type IdentitySource = ({ p12: Buffer; password: string } | { certPem: string; keyPem: string }) & {
  /**
   * Issuer certificates (PEM, one or several per file, or DER) the identity lacks, such as Apple's
   * WWDR intermediate and Apple Root CA, or what completeIdentityChain fetched.
   */
  chain?: readonly Buffer[];
};

/** What loadIdentity reads before the chain is ordered: the leaf, its key, and the certificates beside it. */
interface LoadedIdentity {
  readonly certificate: forge.pki.Certificate;
  readonly privateKey: forge.pki.rsa.PrivateKey;
  readonly others: readonly X509Certificate[];
}

/** Loads a signing identity from a PKCS#12 export (Keychain, openssl) or a PEM certificate and key. */
export function loadIdentity(source: IdentitySource): SigningIdentity {
  const loaded = readIdentity(source);
  const supplied = suppliedCertificates(source);
  return {
    certificate: loaded.certificate,
    privateKey: loaded.privateKey,
    chain: issuerChain(loaded.certificate, loaded.others, supplied),
  };
}

/**
 * Completes an identity's chain up to a root: from its .p12 and supplied certificates, else from
 * each certificate's CA Issuers address (`fetchIssuer`), else from Apple's shipped CA certificates.
 * Returns the source with the certificates it lacked added to `chain`, so that loadIdentity finds
 * them without fetching; refused (CHAIN_INCOMPLETE) with a sentence when an issuer is nowhere.
 */
export async function completeIdentityChain(
  source: IdentitySource,
  options: ChainOptions = {},
): Promise<IdentitySource & { chain: Buffer[] }> {
  const loaded = readIdentity(source);
  const supplied = suppliedCertificates(source);
  const leaf = x509Of(loaded.certificate);
  const chain = await completeChain(leaf, [...supplied, ...loaded.others], options);
  const present = new Set([...supplied, ...loaded.others].map((c) => c.fingerprint256));
  const added = chain.filter((c) => !present.has(c.fingerprint256)).map((c) => Buffer.from(c.toString()));
  return { ...source, chain: [...(source.chain ?? []).map((b) => Buffer.from(b)), ...added] };
}

function readIdentity(source: IdentitySource): LoadedIdentity {
  return 'p12' in source
    ? loadFromP12(source.p12, source.password)
    : loadFromPem(source.certPem, source.keyPem);
}

function suppliedCertificates(source: IdentitySource): X509Certificate[] {
  return (source.chain ?? []).flatMap((bytes, index) =>
    readCertificates(Buffer.from(bytes), `chain file ${index + 1}`),
  );
}

/** Node's view of a forge certificate (which reads RSA keys only). */
export function x509Of(certificate: forge.pki.Certificate): X509Certificate {
  return new X509Certificate(
    Buffer.from(forge.asn1.toDer(forge.pki.certificateToAsn1(certificate)).getBytes(), 'binary'),
  );
}

/**
 * Orders the leaf's issuers, nearest first, from the certificates that came with it, those the
 * operator supplied and Apple's shipped ones. A supplied certificate that issues nothing in the
 * chain is refused (it is a wrong file); extra certificates inside a PKCS#12 are left out.
 */
function issuerChain(
  certificate: forge.pki.Certificate,
  bundled: readonly X509Certificate[],
  supplied: readonly X509Certificate[],
): X509Certificate[] {
  const leaf = x509Of(certificate);
  const chain = orderChain(leaf, [...supplied, ...bundled, ...appleCaCertificates()]);
  const fingerprints = new Set([leaf, ...chain].map((c) => c.fingerprint256));
  const stray = supplied.find((cert) => !fingerprints.has(cert.fingerprint256));
  if (stray !== undefined) {
    throw new IpaError(
      'IDENTITY_INVALID',
      `Expected the chain files to hold issuers of "${nameOf(leaf)}", found "${nameOf(stray)}", which issued none of its chain.`,
    );
  }
  return chain;
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

function loadFromP12(bytes: Buffer, password: string): LoadedIdentity {
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
  const bags = bagsOf(p12, oids.certBag);
  const certificates = bags
    .map((bag) => bag.cert)
    .filter((cert): cert is forge.pki.Certificate => cert !== undefined && cert !== null);
  // forge reads RSA certificates only; an EC one (Apple Root CA - G3, WWDR G2 and G6) keeps its ASN.1.
  const unreadable = bags
    .filter((bag) => !bag.cert && bag.asn1)
    .map((bag) => new X509Certificate(Buffer.from(forge.asn1.toDer(bag.asn1!).getBytes(), 'binary')));
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
  const paired = pairUp(certificates, privateKey, 'P12_INVALID');
  return { ...paired, others: [...paired.others, ...unreadable] };
}

function loadFromPem(certPem: string, keyPem: string): LoadedIdentity {
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
): LoadedIdentity {
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
  return {
    certificate,
    privateKey,
    others: certificates.filter((cert) => cert !== certificate).map(x509Of),
  };
}

function bagsOf(p12: forge.pkcs12.Pkcs12Pfx, bagType: string): forge.pkcs12.Bag[] {
  return p12.getBags({ bagType })[bagType] ?? [];
}
