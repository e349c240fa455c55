/** Key pairs, certificates and CMS signatures for the devices domain (node-forge). */
import { generateKeyPairSync } from 'node:crypto';
import forge from 'node-forge';
import type { SigningIdentity } from '@sideport/ipa';

/**
 * CMS SignedData (RFC 5652) with the content inside, as Apple's provisioning profiles and signed
 * configuration profiles are: SHA-256, the signer's chain carried along.
 */
export function signAttachedCms(content: Buffer, identity: SigningIdentity, now: Date): Buffer {
  const p7 = forge.pkcs7.createSignedData();
  p7.content = forge.util.createBuffer(content.toString('binary'));
  p7.addCertificate(identity.certificate);
  for (const issuer of identity.chain) p7.addCertificate(issuer);
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
