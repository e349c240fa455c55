/**
 * Every error this package throws. One class, one code per reason, so callers branch on `code`
 * and show `message` (a sentence saying what was expected and what was found).
 */
export type IpaErrorCode =
  // The archive itself
  | 'NOT_A_ZIP'
  | 'ZIP_TRUNCATED'
  | 'ZIP_INVALID'
  | 'ZIP_SLIP'
  | 'ZIP_ABSOLUTE_PATH'
  | 'ZIP_DUPLICATE_NAME'
  // Two entries share bytes, or an entry runs into the central directory.
  | 'ZIP_OVERLAP'
  // A local file header (or data descriptor) says other than its central directory entry.
  | 'ZIP_HEADER_MISMATCH'
  // Bytes before the central directory that no entry lists (a record only a streaming reader sees).
  | 'ZIP_UNLISTED_DATA'
  | 'ZIP_BOMB'
  | 'ZIP_TOO_LARGE'
  | 'SYMLINK_ESCAPES_BUNDLE'
  // The app bundle inside it
  | 'NO_APP_BUNDLE'
  | 'SEVERAL_APP_BUNDLES'
  | 'INFO_PLIST_MISSING'
  | 'INFO_PLIST_INCOMPLETE'
  | 'PLIST_INVALID'
  | 'EXECUTABLE_MISSING'
  // Mach-O
  | 'MACHO_BAD_MAGIC'
  | 'MACHO_TRUNCATED'
  | 'MACHO_TOO_LARGE'
  | 'LOAD_COMMANDS_FULL'
  | 'MACHO_ENCRYPTED'
  // Profiles and identities
  | 'PROFILE_INVALID'
  | 'PROFILE_EXPIRED'
  | 'CERTIFICATE_NOT_IN_PROFILE'
  | 'P12_INVALID'
  | 'IDENTITY_INVALID'
  | 'MACHO_UNSUPPORTED'
  // Signing
  | 'SIGNATURE_INVALID'
  // Signing would write more than the input's size plus what signing adds.
  | 'SIGNED_IPA_TOO_LARGE'
  | 'ENTITLEMENTS_INVALID'
  | 'DYLIB_MISSING'
  | 'BUNDLE_ID_INVALID'
  | 'MODE_INVALID'
  | 'SIGNING_UNAVAILABLE';

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
