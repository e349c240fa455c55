/**
 * The signing certificate's chain, as codesign writes it into every signature: the leaf's issuer
 * and each issuer above it up to a root (a certificate that signed itself). A device builds the
 * path from what the signature carries, so a signature with the leaf alone fails there.
 *
 * Each issuer is looked for, in order: among the certificates that came with the identity (its
 * .p12, or certificates its caller supplies), at the address its child names in Authority
 * Information Access as 'CA Issuers' (RFC 5280 4.2.2.1; Apple's certificates name their WWDR
 * intermediate so) when the caller can fetch, and among Apple's public CA certificates shipped in
 * ./apple-pki. Certificates are Node's X509Certificate, which reads RSA and EC keys alike (WWDR G2
 * and G6, and Apple Root CA - G3, are EC).
 */
import { X509Certificate } from 'node:crypto';
import { APPLE_CA_CERTIFICATES } from './apple-pki/index.js';
import { IpaError } from './errors.js';

/** Fetches the bytes (DER or PEM) at a CA Issuers address; throws with a reason when it cannot. */
export type IssuerFetcher = (url: string) => Promise<Buffer>;

export interface ChainOptions {
  /** Fetches CA Issuers addresses; without it none is fetched. */
  fetchIssuer?: IssuerFetcher;
  /** Where the known certificates came from, for the refusal's sentence ('in the .p12 or ...'). */
  origin?: string;
}

/** One certificate of a chain as the admin console and reports show it. */
export interface ChainEntry {
  /** The subject's common name (its whole subject when it has none). */
  readonly name: string;
  readonly expiresAt: Date;
}

// Apple's intermediates and roots have two levels; a longer path is not one to follow.
const MAX_DEPTH = 8;

let shipped: readonly X509Certificate[] | undefined;

/** Apple Root CA, Apple Root CA - G3 and the WWDR intermediates G1-G8 (./apple-pki). */
export function appleCaCertificates(): readonly X509Certificate[] {
  shipped ??= Object.values(APPLE_CA_CERTIFICATES).map((pem) => new X509Certificate(pem));
  return shipped;
}

/**
 * True when `candidate` is named as the issuer of `cert` and its key verifies the signature. The
 * names are compared as OpenSSL does (X509_check_issued, with key identifiers), or as plain text
 * for a certificate OpenSSL's stricter check turns down (Xcode's self-signed test certificates).
 */
export function isIssuedBy(cert: X509Certificate, candidate: X509Certificate): boolean {
  if (!cert.checkIssued(candidate) && cert.issuer !== candidate.subject) return false;
  try {
    return cert.verify(candidate.publicKey);
  } catch {
    return false;
  }
}

/** A root: a certificate that names itself as issuer and whose own key verifies it. */
export const isSelfSigned = (cert: X509Certificate): boolean => isIssuedBy(cert, cert);

/** The common name of a certificate's subject (or issuer), else the whole name on one line. */
export function nameOf(cert: X509Certificate, field: 'subject' | 'issuer' = 'subject'): string {
  const lines = cert[field].split('\n');
  return lines.find((line) => line.startsWith('CN='))?.slice(3) ?? lines.join(', ');
}

/** Where the certificate's issuer can be fetched, when its AIA names an http(s) address. */
export function caIssuersUrl(cert: X509Certificate): string | undefined {
  for (const line of cert.infoAccess?.split('\n') ?? []) {
    const match = /^CA Issuers - URI:(\S+)$/.exec(line.trim());
    if (match && /^https?:\/\//i.test(match[1]!)) return match[1];
  }
  return undefined;
}

/** Certificates in PEM (every CERTIFICATE block) or one DER certificate. */
export function readCertificates(bytes: Buffer, what: string): X509Certificate[] {
  const text = bytes.toString('latin1');
  try {
    if (text.includes('-----BEGIN')) {
      const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
      if (blocks.length === 0) throw new Error('no CERTIFICATE block');
      return blocks.map((block) => new X509Certificate(block));
    }
    return [new X509Certificate(bytes)];
  } catch (err) {
    throw new IpaError(
      'IDENTITY_INVALID',
      `Expected ${what} to be a certificate in PEM or DER, found one that does not parse: ${(err as Error).message}.`,
      { cause: err },
    );
  }
}

/**
 * The leaf's issuers found in `pool`, nearest first, as far as they go: up to a root, or to the
 * first certificate whose issuer the pool lacks.
 */
export function orderChain(leaf: X509Certificate, pool: readonly X509Certificate[]): X509Certificate[] {
  const chain: X509Certificate[] = [];
  let current = leaf;
  while (!isSelfSigned(current) && chain.length < MAX_DEPTH) {
    const issuer = pool.find((c) => !chain.includes(c) && c !== current && isIssuedBy(current, c));
    if (issuer === undefined) break;
    chain.push(issuer);
    current = issuer;
  }
  return chain;
}

/**
 * The certificate whose issuer is missing from the chain (the leaf's, or one above it);
 * undefined when each certificate issued the one before it and the last is a root.
 */
export function chainGap(
  leaf: X509Certificate,
  chain: readonly X509Certificate[],
): X509Certificate | undefined {
  let current = leaf;
  for (const issuer of chain) {
    if (isSelfSigned(current) || !isIssuedBy(current, issuer))
      return isSelfSigned(current) ? undefined : current;
    current = issuer;
  }
  return isSelfSigned(current) ? undefined : current;
}

/**
 * The sentence refusing a leaf whose issuer was found nowhere: which certificate lacks which
 * issuer, where it was looked for, and what to do.
 */
export function missingIssuerSentence(
  leaf: X509Certificate,
  gap: X509Certificate,
  fetched?: { url: string; reason: string },
  origin = 'in the .p12 or the certificates given with it',
): string {
  const whose =
    gap.fingerprint256 === leaf.fingerprint256
      ? `the signing certificate "${nameOf(leaf)}"`
      : `"${nameOf(gap)}"`;
  const places = [
    origin,
    fetched ? `at its CA Issuers address ${fetched.url} (${fetched.reason})` : undefined,
    "among Apple's CA certificates shipped with Sideport",
  ].filter((p): p is string => p !== undefined);
  return `The issuer of ${whose}, "${nameOf(gap, 'issuer')}", is not ${places.join(', nor ')}: a signature without it fails on the device. Export the .p12 with its issuer's certificate (and the root above it).`;
}

/**
 * The leaf's chain up to a root, nearest first: from `known` (the .p12's certificates, supplied
 * ones), else from the CA Issuers address of the certificate whose issuer is sought (with
 * `fetchIssuer`), else from Apple's shipped CA certificates. A leaf that signed itself has an
 * empty chain. Refused (CHAIN_INCOMPLETE) when an issuer is found nowhere.
 */
export async function completeChain(
  leaf: X509Certificate,
  known: readonly X509Certificate[],
  options: ChainOptions = {},
): Promise<X509Certificate[]> {
  const chain: X509Certificate[] = [];
  let current = leaf;
  while (!isSelfSigned(current)) {
    if (chain.length >= MAX_DEPTH)
      throw new IpaError(
        'CHAIN_INCOMPLETE',
        `The chain of "${nameOf(leaf)}" is longer than ${MAX_DEPTH} certificates.`,
      );
    let issuer = known.find((c) => c !== current && isIssuedBy(current, c));
    let fetched: { url: string; reason: string } | undefined;
    const url = caIssuersUrl(current);
    if (issuer === undefined && options.fetchIssuer && url !== undefined) {
      try {
        const found = readCertificates(await options.fetchIssuer(url), `the certificate at ${url}`);
        issuer = found.find((c) => isIssuedBy(current, c));
        if (issuer === undefined) fetched = { url, reason: 'a certificate that did not issue it' };
      } catch (err) {
        fetched = { url, reason: (err as Error).message.replace(/\.$/, '') };
      }
    }
    issuer ??= appleCaCertificates().find((c) => isIssuedBy(current, c));
    if (issuer === undefined)
      throw new IpaError('CHAIN_INCOMPLETE', missingIssuerSentence(leaf, current, fetched, options.origin));
    chain.push(issuer);
    current = issuer;
  }
  return chain;
}

/**
 * Certificates in the order codesign writes them: the CMS `certificates` field is a SET OF,
 * which Apple's Security framework (SecCmsSignedDataEncodeAfterData sorts them with
 * SecCmsUtilDERCompare) and OpenSSL (zsign) both encode sorted by their DER: shorter first, then
 * byte by byte. For an Apple identity that is the WWDR intermediate, Apple Root CA, then the leaf.
 */
export function codesignOrder(ders: readonly Buffer[]): Buffer[] {
  return [...ders].sort((a, b) => a.length - b.length || Buffer.compare(a, b));
}

/** Name and expiry of each certificate, in the order given. */
export function describeChain(certs: readonly X509Certificate[]): ChainEntry[] {
  return certs.map((c) => ({ name: nameOf(c), expiresAt: new Date(c.validTo) }));
}

/**
 * Fetches a CA Issuers address: a DER or PEM certificate (what Apple's addresses serve), at most
 * `maxBytes`, within `timeoutMs`. Throws an Error whose message says why not.
 */
export async function fetchCaIssuer(
  url: string,
  options: { timeoutMs?: number; maxBytes?: number } = {},
): Promise<Buffer> {
  const maxBytes = options.maxBytes ?? 64 * 1024;
  const ask = () => fetch(url, { signal: AbortSignal.timeout(options.timeoutMs ?? 5000) });
  let response: Response;
  try {
    // Once more when the connection failed: a kept-alive one the server had just closed fails so.
    response = await ask().catch(ask);
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(`unreachable: ${cause?.code ?? cause?.message ?? (err as Error).message}`, {
      cause: err,
    });
  }
  const declared = Number(response.headers.get('content-length') ?? 0);
  if (declared > maxBytes) throw new Error(`${declared} bytes, more than a certificate holds`);
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  const body = Buffer.from(await response.arrayBuffer());
  if (body.length > maxBytes) throw new Error(`${body.length} bytes, more than a certificate holds`);
  return body;
}
