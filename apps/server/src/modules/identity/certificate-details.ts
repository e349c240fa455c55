/**
 * What a certificate is, read from its PEM: its fingerprint (how artifacts, profiles and the OCSP
 * cache name it), serial and validity, and the team, name and chain the admin console shows.
 */
import { createHash, X509Certificate } from 'node:crypto';
import { describeChain, loadIdentity, x509Of, type IdentitySource } from '@sideport/ipa';
import type { CurrentCertificate, IdentityDetails } from './ports.js';

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
