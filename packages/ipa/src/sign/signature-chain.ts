/**
 * What certificates an embedded code signature carries, and whether they make the signer's whole
 * chain: a device builds the path from the signature's certificates alone, so one that carries the
 * leaf without its issuer (or the issuer without the root) fails there with "integrity could not
 * be verified", however well its hashes check.
 */
import { X509Certificate } from 'node:crypto';
import forge from 'node-forge';
import { chainGap, nameOf, orderChain } from '../chain.js';
import { IpaError } from '../errors.js';
import { parseMachO } from '../macho/parse.js';
import { CSSLOT_SIGNATURESLOT, parseSuperBlob } from './blobs.js';

export interface SignatureChainReport {
  readonly arch: string;
  /** False when the slice has no signature, or one without a CMS blob (ad-hoc). */
  readonly signed: boolean;
  /** The signer's common name. */
  readonly signer?: string;
  /** Names of the certificates carried, in the order the CMS holds them. */
  readonly certificates: readonly string[];
  /** True when the carried certificates lead from the signer to a root. */
  readonly chainComplete: boolean;
  /** Why not, in a sentence. */
  readonly problem?: string;
}

const { asn1 } = forge;
const children = (node: forge.asn1.Asn1): forge.asn1.Asn1[] =>
  Array.isArray(node.value) ? (node.value as forge.asn1.Asn1[]) : [];
const derOf = (node: forge.asn1.Asn1) => Buffer.from(asn1.toDer(node).getBytes(), 'binary');
const unsignedHex = (bytes: string) =>
  Buffer.from(bytes, 'binary').toString('hex').replace(/^0+/, '').toUpperCase();

/** The certificates a CMS SignedData carries, and the one its first SignerInfo names (issuer and serial). */
export function cmsCertificates(
  cms: Buffer,
  where: string,
): { certificates: X509Certificate[]; signer?: X509Certificate } {
  try {
    const contentInfo = asn1.fromDer(forge.util.createBuffer(cms.toString('binary')));
    const signedData = children(children(children(contentInfo)[1]!)[0]!);
    const certificates = signedData
      .filter((n) => n.tagClass === asn1.Class.CONTEXT_SPECIFIC && n.type === 0)
      .flatMap(children)
      .map((n) => new X509Certificate(derOf(n)));
    const signerInfo = children(signedData.at(-1)!)[0];
    const sid = signerInfo ? children(signerInfo)[1] : undefined;
    const serialNode = sid ? children(sid)[1] : undefined;
    const serial = typeof serialNode?.value === 'string' ? unsignedHex(serialNode.value) : undefined;
    const signer = certificates.find((c) => c.serialNumber.replace(/^0+/, '').toUpperCase() === serial);
    return { certificates, ...(signer ? { signer } : {}) };
  } catch (err) {
    throw new IpaError(
      'SIGNATURE_INVALID',
      `Expected the CMS signature of ${where} to be DER SignedData, found bytes that do not parse.`,
      {
        cause: err,
      },
    );
  }
}

/** Per slice: the certificates its signature carries, and whether they make the signer's chain. */
export function signatureChains(bytes: Buffer, where = 'Mach-O file'): SignatureChainReport[] {
  return parseMachO(bytes, where).slices.map((slice) => {
    const unsigned = { arch: slice.arch, signed: false, certificates: [], chainComplete: false };
    if (slice.codeSignature === undefined)
      return { ...unsigned, problem: `${where} (${slice.arch}) is not signed.` };
    const start = slice.offset + Math.min(slice.codeSignature.dataOffset, slice.size);
    const superBlob = bytes.subarray(
      start,
      Math.min(start + slice.codeSignature.dataSize, slice.offset + slice.size),
    );
    const wrapper = parseSuperBlob(superBlob, where).get(CSSLOT_SIGNATURESLOT);
    if (wrapper === undefined || wrapper.length <= 8)
      return {
        ...unsigned,
        problem: `${where} (${slice.arch}) has an ad-hoc signature, with no certificate.`,
      };
    const { certificates, signer } = cmsCertificates(wrapper.subarray(8), `${where} (${slice.arch})`);
    const names = certificates.map((c) => nameOf(c));
    if (signer === undefined)
      return {
        arch: slice.arch,
        signed: true,
        certificates: names,
        chainComplete: false,
        problem: `The signature of ${where} (${slice.arch}) does not carry its signer's certificate.`,
      };
    const chain = orderChain(signer, certificates);
    const gap = chainGap(signer, chain);
    return {
      arch: slice.arch,
      signed: true,
      signer: nameOf(signer),
      certificates: names,
      chainComplete: gap === undefined,
      ...(gap === undefined
        ? {}
        : {
            problem: `The signature of ${where} (${slice.arch}) carries ${
              chain.length > 0
                ? `"${nameOf(signer)}" and ${chain.length} issuer(s)`
                : `"${nameOf(signer)}" alone`
            }, without "${nameOf(gap, 'issuer')}", the issuer of "${nameOf(gap)}": a device cannot build its chain.`,
          }),
    };
  });
}
