/**
 * Every error this package throws, listed once with what it means (as fastify lists its own in
 * lib/errors.js). One class, one code per reason, so callers branch on `code` and show `message`,
 * a sentence written where the error is raised, saying what was expected and what was found.
 * A new reason gets a new code here; errors.test.ts checks that every code thrown is listed and
 * every listed code is thrown.
 */
export const IPA_ERRORS = {
  // The archive itself
  NOT_A_ZIP: 'The file is not a zip archive: no end of central directory record.',
  ZIP_TRUNCATED: 'The archive ends before a record or an entry it declares.',
  ZIP_INVALID:
    'A zip record is malformed or uses a feature an IPA never needs (encryption, multi-disk, an unknown method).',
  ZIP_SLIP: "An entry's path climbs out of the archive (..).",
  ZIP_ABSOLUTE_PATH: "An entry's path is absolute.",
  ZIP_DUPLICATE_NAME: 'Two entries have the same path.',
  ZIP_OVERLAP: 'Two entries share bytes, or an entry runs into the central directory.',
  ZIP_HEADER_MISMATCH:
    'A local file header (or data descriptor) says other than its central directory entry.',
  ZIP_UNLISTED_DATA:
    'Bytes before the central directory that no entry lists (a record only a streaming reader sees).',
  ZIP_BOMB: 'Entries declare far more bytes than the archive stores.',
  ZIP_TOO_LARGE: 'The archive, an entry or the sum of entries is over the size this package reads.',
  SYMLINK_ESCAPES_BUNDLE: 'A symbolic link points outside the app bundle.',
  // The app bundle inside it
  NO_APP_BUNDLE: 'No Payload/<name>.app folder.',
  SEVERAL_APP_BUNDLES: 'More than one Payload/<name>.app folder.',
  INFO_PLIST_MISSING: 'The app bundle has no Info.plist.',
  INFO_PLIST_INCOMPLETE: 'Info.plist lacks a key every app has (bundle id, version, executable).',
  PLIST_INVALID: 'A property list is neither valid XML nor valid binary plist.',
  EXECUTABLE_MISSING: 'The executable Info.plist names is not in the bundle.',
  // Mach-O
  MACHO_BAD_MAGIC: 'A file expected to be Mach-O (thin or fat) has another magic number.',
  MACHO_TRUNCATED: 'A Mach-O header, load command or slice runs past the end of its file.',
  MACHO_TOO_LARGE: 'A Mach-O file or slice is over the size this package signs.',
  LOAD_COMMANDS_FULL: 'No room after the load commands for the one a sign adds.',
  MACHO_ENCRYPTED: 'A Mach-O slice has an encryption command whose cryptid is not 0.',
  MACHO_UNSUPPORTED: 'A Mach-O shape this package does not sign (CPU, file type or signature layout).',
  // Profiles and identities
  PROFILE_INVALID: 'A provisioning profile is not CMS-signed XML with the keys iOS reads.',
  PROFILE_EXPIRED: 'A provisioning profile is past its ExpirationDate.',
  CERTIFICATE_NOT_IN_PROFILE: "The signing certificate is not one of the profile's DeveloperCertificates.",
  P12_INVALID: 'A PKCS#12 file cannot be opened, or holds no key with its certificate.',
  IDENTITY_INVALID:
    'A PEM certificate and key do not make a signing identity (no key, or a key of another certificate).',
  CHAIN_INCOMPLETE:
    "The signing certificate's issuer (or one above it) is in neither its .p12, its CA Issuers address nor Apple's shipped CA certificates.",
  // Signing
  SIGNATURE_INVALID: 'A code signature or CMS blob does not verify, or is malformed.',
  SIGNED_IPA_TOO_LARGE: "Signing would write more than the input's size plus what signing adds.",
  ENTITLEMENTS_INVALID: 'The entitlements are not a dictionary property list.',
  DYLIB_MISSING: 'A dylib a sign mode injects is not there.',
  BUNDLE_ID_INVALID: 'A bundle id is not reverse-DNS letters, digits, dots and hyphens.',
  MODE_INVALID: 'A sign mode number this package does not know.',
} as const;

export type IpaErrorCode = keyof typeof IPA_ERRORS;

export class IpaError extends Error {
  readonly code: IpaErrorCode;

  constructor(code: IpaErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'IpaError';
    this.code = code;
  }
}

export function isIpaError(value: unknown): value is IpaError {
  return value instanceof IpaError;
}
