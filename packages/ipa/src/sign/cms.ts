/**
 * The CMS SignedData (RFC 5652) that signs a CodeDirectory: detached content, SHA-256, and Apple's
 * two signed attributes carrying every CodeDirectory's hash (1.2.840.113635.100.9.1: a plist of
 * cdhashes cut to 20 bytes; .9.2: (digest OID, full digest) per CodeDirectory, as Security's
 * CMSEncoderSetAppleCodesigningHashAgilityV2 writes it), so the kernel can check the SHA-256
 * CodeDirectory while the signature covers the first one.
 */
import { createHash, createPrivateKey, sign as rsaSign, type KeyObject } from 'node:crypto';
import forge from 'node-forge';
import { buildXmlPlist } from '../plist.js';
import { chainGap, codesignOrder, missingIssuerSentence } from '../chain.js';
import { IpaError } from '../errors.js';
import { x509Of, type SigningIdentity } from '../identity.js';

const { asn1 } = forge;
const OID = {
  data: '1.2.840.113549.1.7.1',
  signedData: '1.2.840.113549.1.7.2',
  contentType: '1.2.840.113549.1.9.3',
  messageDigest: '1.2.840.113549.1.9.4',
  signingTime: '1.2.840.113549.1.9.5',
  sha1: '1.3.14.3.2.26',
  sha256: '2.16.840.1.101.3.4.2.1',
  rsaEncryption: '1.2.840.113549.1.1.1',
  appleCdHashes: '1.2.840.113635.100.9.1',
  appleCdHashes2: '1.2.840.113635.100.9.2',
} as const;

export interface CmsSigner {
  /** Signs `content` (the first CodeDirectory); `cdHashes` lists each CodeDirectory's full hash. */
  sign(content: Buffer, cdHashes: readonly { hash: 'sha1' | 'sha256'; digest: Buffer }[], now: Date): Buffer;
  /** Upper bound of the DER size, to reserve room in the Mach-O before hashing. */
  readonly maxSizeBytes: number;
}

const oid = (value: string): forge.asn1.Asn1 =>
  asn1.create(asn1.Class.UNIVERSAL, asn1.Type.OID, false, asn1.oidToDer(value).getBytes());
const seq = (items: forge.asn1.Asn1[]): forge.asn1.Asn1 =>
  asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, items);
const set = (items: forge.asn1.Asn1[]): forge.asn1.Asn1 =>
  asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SET, true, items);
const octets = (bytes: Buffer): forge.asn1.Asn1 =>
  asn1.create(asn1.Class.UNIVERSAL, asn1.Type.OCTETSTRING, false, bytes.toString('binary'));
const nul = (): forge.asn1.Asn1 => asn1.create(asn1.Class.UNIVERSAL, asn1.Type.NULL, false, '');
const int = (value: number): forge.asn1.Asn1 =>
  asn1.create(asn1.Class.UNIVERSAL, asn1.Type.INTEGER, false, asn1.integerToDer(value).getBytes());
const der = (node: forge.asn1.Asn1): Buffer => Buffer.from(asn1.toDer(node).getBytes(), 'binary');
const fromDer = (bytes: Buffer): forge.asn1.Asn1 =>
  asn1.fromDer(forge.util.createBuffer(bytes.toString('binary')));
const algorithm = (id: string): forge.asn1.Asn1 => seq([oid(id), nul()]);
const attribute = (type: string, values: forge.asn1.Asn1[]): Buffer => der(seq([oid(type), set(values)]));

/**
 * The signer of every Mach-O's CodeDirectory. Refused (CHAIN_INCOMPLETE) when the identity's chain
 * stops short of a root: the signature carries the leaf, its issuers and the root, in codesign's
 * order (chain.ts, codesignOrder), and one without them fails on the device.
 */
export function createCmsSigner(identity: SigningIdentity): CmsSigner {
  const gap = chainGap(x509Of(identity.certificate), identity.chain);
  if (gap !== undefined)
    throw new IpaError('CHAIN_INCOMPLETE', missingIssuerSentence(x509Of(identity.certificate), gap));
  const key: KeyObject = createPrivateKey(forge.pki.privateKeyToPem(identity.privateKey));
  const leafDer = certificateDer(identity.certificate);
  const chainDers = identity.chain.map((c) => c.raw);
  // tbsCertificate: [0] version, serialNumber, signature, issuer, ...
  const tbs = (fromDer(leafDer).value as forge.asn1.Asn1[])[0]!;
  const tbsFields = tbs.value as forge.asn1.Asn1[];
  const hasVersion = tbsFields[0]!.tagClass === asn1.Class.CONTEXT_SPECIFIC;
  const serial = tbsFields[hasVersion ? 1 : 0]!;
  const issuer = tbsFields[hasVersion ? 3 : 2]!;
  const keyBytes = Math.ceil(identity.privateKey.n.bitLength() / 8);
  const certificatesBytes = leafDer.length + chainDers.reduce((sum, c) => sum + c.length, 0);

  return {
    // Certificates, the RSA signature, issuer and attributes, plus generous framing.
    maxSizeBytes: certificatesBytes + keyBytes + der(issuer).length + 1024,
    sign(content, cdHashes, now) {
      const plist = buildXmlPlist({ cdhashes: cdHashes.map(({ digest }) => digest.subarray(0, 20)) });
      // Hash agility v2: one attribute whose values are (digest OID, full digest), one per CodeDirectory.
      const agility = cdHashes
        .map(({ hash, digest }) => der(seq([oid(OID[hash]), octets(digest)])))
        .sort(Buffer.compare);
      const attributes = [
        attribute(OID.contentType, [oid(OID.data)]),
        attribute(OID.signingTime, [
          asn1.create(asn1.Class.UNIVERSAL, asn1.Type.UTCTIME, false, asn1.dateToUtcTime(now)),
        ]),
        attribute(OID.messageDigest, [octets(createHash('sha256').update(content).digest())]),
        attribute(OID.appleCdHashes, [octets(Buffer.from(plist, 'utf8'))]),
        attribute(OID.appleCdHashes2, agility.map(fromDer)),
      ].sort(Buffer.compare); // DER orders a SET OF by encoding; verifiers re-encode it so.
      // The signature covers the attributes encoded as a SET (tag 0x31), not as the [0] they are stored in.
      const attributesSet = Buffer.concat([
        Buffer.from([0x31]),
        derLength(attributes.reduce((n, a) => n + a.length, 0)),
        ...attributes,
      ]);
      const signature = rsaSign('sha256', attributesSet, key);
      const signedAttrs = asn1.create(asn1.Class.CONTEXT_SPECIFIC, 0, true, attributes.map(fromDer));
      const signerInfo = seq([
        int(1),
        seq([issuer, serial]),
        algorithm(OID.sha256),
        signedAttrs,
        algorithm(OID.rsaEncryption),
        octets(signature),
      ]);
      const signedData = seq([
        int(1),
        set([algorithm(OID.sha256)]),
        seq([oid(OID.data)]),
        asn1.create(
          asn1.Class.CONTEXT_SPECIFIC,
          0,
          true,
          codesignOrder([leafDer, ...chainDers]).map(fromDer),
        ),
        set([signerInfo]),
      ]);
      return der(seq([oid(OID.signedData), asn1.create(asn1.Class.CONTEXT_SPECIFIC, 0, true, [signedData])]));
    },
  };
}

function certificateDer(certificate: forge.pki.Certificate): Buffer {
  return der(forge.pki.certificateToAsn1(certificate));
}

function derLength(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}
