/**
 * A signing certificate's revocation status from its issuer's OCSP responder (RFC 6960), as iOS
 * asks it before it runs what that certificate signed: a request naming the certificate (its
 * issuer's name and key hashes and its serial, RFC 6960 4.1.1) and a nonce, POSTed as
 * application/ocsp-request; an answer read only once its signature verifies, by the issuer itself
 * or by a responder certificate the issuer made for that purpose (4.2.2.2). Building and reading
 * the DER is pkijs and asn1js; the certificate checks are Node's.
 */
import { createHash, randomBytes, webcrypto, X509Certificate } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';

const engine = new pkijs.CryptoEngine({ name: 'node', crypto: webcrypto as unknown as Crypto });

// RFC 6960 4.2.1 and 4.4.1; RFC 5280 4.2.1.12 (id-kp-OCSPSigning).
const OID_OCSP_BASIC = '1.3.6.1.5.5.7.48.1.1';
const OID_OCSP_NONCE = '1.3.6.1.5.5.7.48.1.2';
const OID_OCSP_SIGNING = '1.3.6.1.5.5.7.3.9';
/** OCSPResponseStatus (4.2.1), for the sentence when a responder refuses. */
const RESPONSE_STATUS = [
  'successful',
  'malformedRequest',
  'internalError',
  'tryLater',
  '(unused)',
  'sigRequired',
  'unauthorized',
];
/** How far a responder's clock may run ahead of ours before its answer is refused. */
const CLOCK_SKEW_MS = 5 * 60_000;
const MAX_ANSWER_BYTES = 64 * 1024;

export type OcspCertStatus = 'good' | 'revoked' | 'unknown';

export interface OcspAnswer {
  status: OcspCertStatus;
  /** When the issuer revoked it (revoked only). */
  revokedAt?: Date;
  thisUpdate: Date;
  /** Until when the responder stands by this answer; none: ask again whenever. */
  nextUpdate?: Date;
}

/** An answer that could not be had or trusted: the responder unreachable, refusing, or its signature wrong. */
export class OcspError extends Error {
  override name = 'OcspError';
}

/** The addresses a certificate's Authority Information Access names (RFC 5280 4.2.2.1). */
function infoAccess(certPem: string, method: 'OCSP' | 'CA Issuers'): string | undefined {
  const lines = new X509Certificate(certPem).infoAccess?.split('\n') ?? [];
  for (const line of lines) {
    const match = /^(.+?) - URI:(\S+)$/.exec(line.trim());
    if (match?.[1] === method && /^https?:\/\//i.test(match[2]!)) return match[2];
  }
  return undefined;
}

/** The certificate's own OCSP responder address, when it names one. */
export const responderUrl = (certPem: string) => infoAccess(certPem, 'OCSP');

/** Where its issuer's certificate can be fetched (Apple's name their WWDR intermediate so). */
export const issuerUrl = (certPem: string) => infoAccess(certPem, 'CA Issuers');

const toPkijs = (pem: string) => {
  const der = new X509Certificate(pem).raw;
  return new pkijs.Certificate({ schema: asn1js.fromBER(new Uint8Array(der)).result });
};

/** An OCSPRequest for one certificate (SHA-1 CertID, as responders all accept) with a random nonce. */
export async function buildOcspRequest(
  certPem: string,
  issuerPem: string,
): Promise<{ der: Buffer; nonce: Buffer }> {
  const request = new pkijs.OCSPRequest();
  await request.createForCertificate(
    toPkijs(certPem),
    { hashAlgorithm: 'SHA-1', issuerCertificate: toPkijs(issuerPem) },
    engine,
  );
  const nonce = randomBytes(16);
  // The nonce extension's value is the DER of an OCTET STRING holding the nonce (RFC 8954).
  request.tbsRequest.requestExtensions = [
    new pkijs.Extension({
      extnID: OID_OCSP_NONCE,
      extnValue: new asn1js.OctetString({ valueHex: new Uint8Array(nonce) }).toBER(false),
    }),
  ];
  return { der: Buffer.from(request.toSchema(true).toBER(false)), nonce };
}

/**
 * Reads a responder's DER answer about `certPem`: refused (OcspError) unless it is a successful
 * basic response, signed by the issuer or a delegated responder of it, about this very
 * certificate, current at `now`, and echoing our nonce when it carries one.
 */
export async function readOcspResponse(
  der: Buffer,
  request: { certPem: string; issuerPem: string; nonce?: Buffer },
  now: Date,
): Promise<OcspAnswer> {
  const parsed = asn1js.fromBER(new Uint8Array(der));
  if (parsed.offset === -1) throw new OcspError('The OCSP answer is not DER.');
  let response: pkijs.OCSPResponse;
  try {
    response = new pkijs.OCSPResponse({ schema: parsed.result });
  } catch (err) {
    throw new OcspError('The OCSP answer is not an OCSPResponse.', { cause: err });
  }
  const status = response.responseStatus.valueBlock.valueDec;
  if (status !== 0)
    throw new OcspError(`The OCSP responder answered ${RESPONSE_STATUS[status] ?? `status ${status}`}.`);
  if (response.responseBytes?.responseType !== OID_OCSP_BASIC)
    throw new OcspError('The OCSP answer is not a basic response.');
  let basic: pkijs.BasicOCSPResponse;
  try {
    basic = new pkijs.BasicOCSPResponse({
      schema: asn1js.fromBER(response.responseBytes.response.valueBlock.valueHexView).result,
    });
  } catch (err) {
    throw new OcspError('The OCSP basic response does not parse.', { cause: err });
  }

  const issuer = new X509Certificate(request.issuerPem);
  await verifySigner(basic, issuer, now);

  const certificate = toPkijs(request.certPem);
  const issuerCert = toPkijs(request.issuerPem);
  let single: pkijs.SingleResponse | undefined;
  for (const candidate of basic.tbsResponseData.responses) {
    const hash = engine.getAlgorithmByOID(candidate.certID.hashAlgorithm.algorithmId, false);
    if (!hash || !('name' in hash)) continue;
    const ours = new pkijs.CertID();
    await ours.createForCertificate(
      certificate,
      { hashAlgorithm: hash.name, issuerCertificate: issuerCert },
      engine,
    );
    if (candidate.certID.isEqual(ours)) {
      single = candidate;
      break;
    }
  }
  if (!single) throw new OcspError('The OCSP answer is about another certificate.');

  const nonceExtension = basic.tbsResponseData.responseExtensions?.find((e) => e.extnID === OID_OCSP_NONCE);
  if (nonceExtension && request.nonce) {
    const inner = asn1js.fromBER(nonceExtension.extnValue.valueBlock.valueHexView).result;
    const echoed =
      inner instanceof asn1js.OctetString ? Buffer.from(inner.valueBlock.valueHexView) : Buffer.alloc(0);
    if (!echoed.equals(request.nonce))
      throw new OcspError("The OCSP answer carries another request's nonce.");
  }

  const thisUpdate = single.thisUpdate;
  const nextUpdate = single.nextUpdate;
  if (thisUpdate.getTime() > now.getTime() + CLOCK_SKEW_MS)
    throw new OcspError('The OCSP answer is dated in the future.');
  if (nextUpdate && nextUpdate.getTime() < now.getTime() - CLOCK_SKEW_MS)
    throw new OcspError('The OCSP answer is out of date.');

  // CertStatus (4.2.1): good [0] IMPLICIT NULL, revoked [1] IMPLICIT RevokedInfo, unknown [2] IMPLICIT NULL.
  const tag = single.certStatus.idBlock;
  const base = { thisUpdate, ...(nextUpdate ? { nextUpdate } : {}) };
  if (tag.tagClass === 3 && tag.tagNumber === 0) return { status: 'good', ...base };
  if (tag.tagClass === 3 && tag.tagNumber === 1) {
    // RevokedInfo ::= SEQUENCE { revocationTime GeneralizedTime, revocationReason [0] EXPLICIT CRLReason OPTIONAL }
    const time = (single.certStatus as asn1js.Constructed).valueBlock.value[0];
    const revokedAt = time instanceof asn1js.GeneralizedTime ? time.toDate() : undefined;
    return { status: 'revoked', ...(revokedAt ? { revokedAt } : {}), ...base };
  }
  return { status: 'unknown', ...base };
}

/**
 * The answer's signer (RFC 6960 4.2.2.2): the issuer itself, or a certificate in the answer that
 * the issuer signed, for OCSP signing, valid now. Its signature over the answer must verify.
 */
async function verifySigner(basic: pkijs.BasicOCSPResponse, issuer: X509Certificate, now: Date) {
  const responderId = basic.tbsResponseData.responderID as
    pkijs.RelativeDistinguishedNames | asn1js.OctetString;
  const issuerPkijs = toPkijs(issuer.toString());
  const candidates = [issuerPkijs, ...(basic.certs ?? [])];
  const keyHash = (c: pkijs.Certificate) =>
    createHash('sha1').update(c.subjectPublicKeyInfo.subjectPublicKey.valueBlock.valueHexView).digest();
  const isResponder = (c: pkijs.Certificate) =>
    responderId instanceof pkijs.RelativeDistinguishedNames
      ? c.subject.isEqual(responderId)
      : Buffer.from(responderId.valueBlock.valueHexView).equals(keyHash(c));
  for (const candidate of candidates.filter(isResponder)) {
    const x509 = new X509Certificate(Buffer.from(candidate.toSchema(true).toBER(false)));
    const isIssuer = x509.raw.equals(issuer.raw) || keyHash(candidate).equals(keyHash(issuerPkijs));
    if (!isIssuer) {
      const isDelegate =
        x509.checkIssued(issuer) &&
        x509.verify(issuer.publicKey) &&
        (x509.keyUsage ?? []).includes(OID_OCSP_SIGNING) &&
        new Date(x509.validFrom).getTime() <= now.getTime() + CLOCK_SKEW_MS &&
        new Date(x509.validTo).getTime() >= now.getTime();
      if (!isDelegate) continue;
    }
    const verified = await engine
      .verifyWithPublicKey(
        new Uint8Array(basic.tbsResponseData.tbsView),
        basic.signature,
        candidate.subjectPublicKeyInfo,
        basic.signatureAlgorithm,
      )
      .catch(() => false);
    if (verified) return;
  }
  throw new OcspError(
    "The OCSP answer is not signed by the certificate's issuer or a responder it authorised.",
  );
}

/** Asks `url` about `certPem` (issued by `issuerPem`) and reads the answer; OcspError when none can be had. */
export async function askResponder(options: {
  url: string;
  certPem: string;
  issuerPem: string;
  now: Date;
  timeoutMs: number;
}): Promise<OcspAnswer> {
  const { der, nonce } = await buildOcspRequest(options.certPem, options.issuerPem);
  let response: Response;
  try {
    response = await fetch(options.url, {
      method: 'POST',
      headers: { 'content-type': 'application/ocsp-request', accept: 'application/ocsp-response' },
      body: new Uint8Array(der),
      signal: AbortSignal.timeout(options.timeoutMs),
    });
  } catch (err) {
    throw new OcspError(`The OCSP responder ${options.url} could not be reached.`, { cause: err });
  }
  if (!response.ok)
    throw new OcspError(`The OCSP responder ${options.url} answered HTTP ${response.status}.`);
  const body = Buffer.from(await response.arrayBuffer());
  if (body.length > MAX_ANSWER_BYTES)
    throw new OcspError(
      `The OCSP responder ${options.url} answered ${body.length} bytes, more than an answer holds.`,
    );
  return readOcspResponse(
    body,
    { certPem: options.certPem, issuerPem: options.issuerPem, nonce },
    options.now,
  );
}
