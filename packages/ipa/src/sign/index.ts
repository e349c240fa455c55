/**
 * Code signing of Mach-O files (src/sign): the engine signIpa drives, and the pieces callers need
 * beside it (cdhashes to seal nested code, the requirement text CodeResources records).
 */
export { signMachO } from './macho-sign.js';
export type { CodeSignInput, SignedCode } from './macho-sign.js';
// The same signature for binaries too large to hold: read through a window, written to a sink.
export { signMachOStream } from './macho-sign-stream.js';
export type { ReadAt, Sink, StreamedCode } from './macho-sign-stream.js';
export { createCmsSigner } from './cms.js';
export type { CmsSigner } from './cms.js';
export { codeDirectoryHashes } from './cdhash.js';
export type { CodeDirectoryHash, SliceCodeDirectoryHashes } from './cdhash.js';
export { buildRequirementsBlob, requirementSubjectFor, requirementText } from './requirements.js';
export type { RequirementSubject } from './requirements.js';
export { encodeDerEntitlements } from './der-entitlements.js';
export { readEmbeddedEntitlements, readEmbeddedEntitlementsAt } from './read-signature.js';
// Whether each slice's signature carries its signer's whole chain (sideport-ipa verify).
export { cmsCertificates, signatureChains } from './signature-chain.js';
export type { SignatureChainReport } from './signature-chain.js';
export { createGroupRemap, isAllowedBy, mergeEntitlements } from './entitlements.js';
export type { EntitlementsInput } from './entitlements.js';
// Blob framing and slot numbers from Security's cscdefs.h, for callers that read signatures.
export {
  CSMAGIC_BLOBWRAPPER,
  CSMAGIC_CODEDIRECTORY,
  CSMAGIC_EMBEDDED_DER_ENTITLEMENTS,
  CSMAGIC_EMBEDDED_ENTITLEMENTS,
  CSMAGIC_EMBEDDED_SIGNATURE,
  CSMAGIC_REQUIREMENTS,
  CSSLOT_ALTERNATE_CODEDIRECTORIES,
  CSSLOT_CODEDIRECTORY,
  CSSLOT_DER_ENTITLEMENTS,
  CSSLOT_ENTITLEMENTS,
  CSSLOT_INFOSLOT,
  CSSLOT_REQUIREMENTS,
  CSSLOT_RESOURCEDIR,
  CSSLOT_SIGNATURESLOT,
  parseSuperBlob,
} from './blobs.js';
