/**
 * Checks a CMS SignedData with pkijs, a verifier that is not the one that signed (node-forge signs
 * the profiles), in Node with no openssl command: the signature over the content, and the signer's
 * chain up to `caPem` at `at` (or now).
 */
import { X509Certificate, webcrypto } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';

const engine = new pkijs.CryptoEngine({ name: 'node', crypto: webcrypto as unknown as Crypto });

/** The signed content; rejects when the signature or the chain to `caPem` does not verify. */
export async function verifyCms(der: Buffer, caPem: string, at?: Date): Promise<Buffer> {
  const parsed = asn1js.fromBER(new Uint8Array(der));
  if (parsed.offset === -1) throw new Error('not DER');
  const signed = new pkijs.SignedData({ schema: new pkijs.ContentInfo({ schema: parsed.result }).content });
  const ca = pkijs.Certificate.fromBER(new X509Certificate(caPem).raw);
  const result = await signed.verify(
    { signer: 0, trustedCerts: [ca], checkChain: true, checkDate: at ?? new Date(), extendedMode: true },
    engine,
  );
  if (result.signatureVerified !== true)
    throw new Error(`the CMS signature does not verify: ${result.message}`);
  const content = signed.encapContentInfo.eContent;
  if (!content) throw new Error('the CMS has no content');
  return Buffer.from(content.getValue());
}
