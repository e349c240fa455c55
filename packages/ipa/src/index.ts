/**
 * The public surface of @sideport/ipa. Everything a caller may use is exported here; anything
 * else is internal and may change.
 */

// Errors: one class, one code per reason.
export { IpaError, isIpaError } from './errors.js';
export type { IpaErrorCode } from './errors.js';

// The decrypt pipeline's check.
export { check } from './check.js';
export type { CheckOptions, CheckProgress, CheckReport, MachOReport, SliceReport } from './check.js';
export type { MachOInspector } from './macho-inspector.js';
// What a decrypt result must be before anyone accepts it (the agent before uploading, the server
// before storing), and the store's own record of where an IPA came from.
export { findContradiction, verifyDecrypted } from './verify.js';
export type { DecryptedFacts, DecryptedVerdict, DecryptExpectation } from './verify.js';
export { readStoreMetadata } from './store-metadata.js';
export type { StoreMetadata } from './store-metadata.js';

// Archives and bundles, for callers that need more than the check report.
export { openZip, openZipFromBuffer, openZipFromReader, defaultZipLimits } from './zip/index.js';
export type { OpenEntryOptions, OpenZipOptions, ZipArchive, ZipEntry, ZipLimits } from './zip/index.js';
export { describeBundle, findAppBundle, findMachOEntries, readInfoPlist } from './bundle.js';
export type { AppBundle, BundleInfo } from './bundle.js';
export { buildBinaryPlist, buildXmlPlist, parsePlist, parsePlistDict } from './plist.js';
export type { PlistObject, PlistValue } from './plist.js';

// Mach-O reading.
export { isMachOHead, parseMachO } from './macho/index.js';
export type { DylibReference, MachOFile, MachOSlice, Segment } from './macho/index.js';

// Profiles and signing identities.
export { assertProfileUsable, isProfileExpired, parseProfile } from './profile.js';
export type { DeveloperCertificate, Profile } from './profile.js';
export { completeIdentityChain, loadIdentity, x509Of } from './identity.js';
export type { IdentitySource, SigningIdentity } from './identity.js';
// The signer's chain as codesign writes it (leaf, issuers, root), and Apple's shipped CA certificates.
export {
  appleCaCertificates,
  caIssuersUrl,
  codesignOrder,
  completeChain,
  describeChain,
  fetchCaIssuer,
  isIssuedBy,
  isSelfSigned,
  nameOf,
  orderChain,
} from './chain.js';
export type { ChainEntry, ChainOptions, IssuerFetcher } from './chain.js';

// Mach-O parsing (src/macho): slices, load commands, encryption and signature commands.
export * from './macho/index.js';

// Signing whole IPAs: nested code inside-out, CodeResources, the five sign modes (docs/product.md).
// What each mode injects and renames, in one table; also the package's `./sign-modes` export, which
// imports nothing, for callers that want the table without the toolkit (a web app's bundle).
export { findSigningMode, SIGN_MODE_NUMBERS, SIGNING_MODES } from './sign-modes.js';
export type { DylibKind, SigningMode } from './sign-modes.js';
// The service's entry point: identity as PKCS#12 or PEM, a mode, the operator's dylibs of each kind
// (paths or bytes); the mode picks which go in, and which of them is the CydiaSubstrate (isSubstrate).
export { sign } from './sign-ipa/sign.js';
export type { SignOptions, SignReport } from './sign-ipa/sign.js';
export { dylibsForMode } from './sign-ipa/mode-needs.js';
export type { DylibSource, ModeDylibs } from './sign-ipa/mode-needs.js';
export { isSubstrate } from './sign-ipa/modes.js';
export { signIpa } from './sign-ipa/sign-ipa.js';
// A service fills a version's digest cache when the version arrives, before anyone signs it.
export { warmDigestCache } from './sign-ipa/warm.js';
export type { WarmDigestOptions } from './sign-ipa/warm.js';
export type { AppDescription, SignIpaOptions, SignIpaReport } from './sign-ipa/sign-ipa.js';
export type { MachOSigner, MachOSignRequest } from './sign-ipa/signer.js';
export { createMachOSigner } from './sign-ipa/engine.js';
// The Mach-O signing engine itself (src/sign): in memory or streamed, and the blobs it writes.
export * from './sign/index.js';
export * from './capabilities/index.js';
export type { InjectedDylib, SignMode } from './sign-ipa/modes.js';
export { buildCodeResources } from './resources/index.js';
// How a process that signs should be started (malloc arenas, V8 young generation).
export { SIGN_PROCESS_TUNING } from './process-tuning.js';
export type { SealedFile, SealedNested } from './resources/index.js';
