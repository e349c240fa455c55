/**
 * Key pairs, certificates and CMS signatures (node-forge) for the signing identities, and for the
 * devices domain's enrollment profiles and simulated devices. Plain crypto that both modules use
 * and neither owns, so it lives here and the two import it, not each other.
 */
import { generateKeyPairSync } from 'node:crypto';
import forge from 'node-forge';
import { codesignOrder, type SigningIdentity } from '@sideport/ipa';

/**
 * CMS SignedData (RFC 5652) with the content inside, as Apple's provisioning profiles and signed
 * configuration profiles are: SHA-256, the signer's chain carried along in codesign's order (sorted
 * as a DER SET OF, which forge does not do for us).
 */
export function signAttachedCms(content: Buffer, identity: SigningIdentity, now: Date): Buffer {
  const p7 = forge.pkcs7.createSignedData();
  p7.content = forge.util.createBuffer(content.toString('binary'));
  const ders = codesignOrder([certificateDer(identity.certificate), ...identity.chain.map((c) => c.raw)]);
  // forge reads RSA certificates only: the leaf, and the dev CA or the .p12's RSA issuers.
  for (const der of ders)
    p7.addCertificate(forge.pki.certificateFromAsn1(forge.asn1.fromDer(der.toString('binary'))));
  p7.addSigner({
    key: identity.privateKey,
    certificate: identity.certificate,
    digestAlgorithm: forge.pki.oids.sha256!,
    // Listed in DER SET OF order (by encoding: these three sort by length), which forge does not
    // sort for us; verifiers that re-encode the attributes then hash the same bytes we signed.
    authenticatedAttributes: [
      { type: forge.pki.oids.contentType!, value: forge.pki.oids.data! },
      { type: forge.pki.oids.signingTime!, value: now.toISOString() },
      { type: forge.pki.oids.messageDigest! },
    ],
  });
  p7.sign({ detached: false });
  return Buffer.from(forge.asn1.toDer(p7.toAsn1()).getBytes(), 'binary');
}

/** DER of a certificate, as profiles list them. */
export function certificateDer(certificate: forge.pki.Certificate): Buffer {
  return Buffer.from(forge.asn1.toDer(forge.pki.certificateToAsn1(certificate)).getBytes(), 'binary');
}

/** An RSA 2048 key pair as forge objects, and the private key as PKCS#8 PEM. */
export function generateRsaKeyPair() {
  // Node's generator (OpenSSL) rather than forge's pure JavaScript one: the same key, far faster.
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const privateKeyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const forgeKey = forge.pki.privateKeyFromPem(privateKeyPem) as forge.pki.rsa.PrivateKey;
  return {
    privateKey: forgeKey,
    publicKey: forge.pki.setRsaPublicKey(forgeKey.n, forgeKey.e),
    privateKeyPem,
  };
}

/** Upper-case RFC 4122 version 4 form, as Apple writes profile UUIDs. */
export function uuidFrom(bytes: Buffer): string {
  const b = Buffer.from(bytes.subarray(0, 16));
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const hex = b.toString('hex').toUpperCase();
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
