import forge from 'node-forge';
import yazl from 'yazl';
import { loadIdentity, type IdentitySource } from '@sideport/ipa';

/**
 * A PKCS#12 of the signing identity under `password`, with its issuers. Triple DES and SHA-1 (the
 * PKCS#12 every iOS version and Feather import), not OpenSSL 3's AES default.
 */
export function exportP12(identity: IdentitySource, password: string): Buffer {
  const loaded = loadIdentity(identity);
  // forge writes RSA certificates only; an EC issuer (Apple Root CA - G3) is left to the device's own store.
  const issuers = loaded.chain.flatMap((c) => {
    try {
      return [forge.pki.certificateFromPem(c.toString())];
    } catch {
      return [];
    }
  });
  const asn1 = forge.pkcs12.toPkcs12Asn1(loaded.privateKey, [loaded.certificate, ...issuers], password, {
    algorithm: '3des',
    friendlyName: String(loaded.certificate.subject.getField('CN')?.value ?? 'Sideport'),
  });
  return Buffer.from(forge.asn1.toDer(asn1).getBytes(), 'binary');
}

/**
 * GET /api/feather/cert's file: the .p12 of the Feather certificate (its own, not the one that signs
 * the service's apps) and a .mobileprovision for it listing the user's devices, for Feather to sign with.
 */
export function featherCertZip(
  material: { identity: IdentitySource; profile: Buffer },
  password: string,
): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  zip.addBuffer(exportP12(material.identity, password), 'sideport.p12');
  zip.addBuffer(material.profile, 'sideport.mobileprovision');
  zip.end();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    zip.outputStream.on('data', (c: Buffer) => chunks.push(c));
    zip.outputStream.on('end', () => resolve(Buffer.concat(chunks)));
    zip.outputStream.on('error', reject);
  });
}
