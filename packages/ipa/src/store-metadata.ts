import { parsePlistDict, readString } from './plist.js';
import { openZip, type OpenZipOptions } from './zip/index.js';

/** What an App Store IPA's `iTunesMetadata.plist` (at the archive's root) says of its origin. */
export interface StoreMetadata {
  /** `softwareVersionExternalIdentifier`: the store's id of this version (Sideport's app_ver_id), as decimal text. */
  readonly appVerId?: string;
  /** `bundleShortVersionString`. */
  readonly version?: string;
  /** `softwareVersionBundleId`. */
  readonly bundleId?: string;
  /** `itemId`: the store's id of the app (Sideport's app_id), as decimal text. */
  readonly appId?: string;
}

// The store writes a few KiB (artwork is a separate entry); anything far larger is not this file.
const MAX_METADATA_BYTES = 4 * 1024 * 1024;
const METADATA_ENTRY = 'iTunesMetadata.plist';

/** A positive whole number, whether the plist stored it as an integer or as text. */
function storeIdOf(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) return String(value);
  if (typeof value === 'string' && /^[1-9]\d{0,18}$/.test(value.trim())) return value.trim();
  return undefined;
}

/**
 * Reads the IPA's `iTunesMetadata.plist`, which IPAs fetched from the store carry beside
 * `Payload/`. Undefined when the archive has none; an `IpaError` when the archive or the plist is
 * unreadable. Fields of an unexpected type are left out.
 */
export async function readStoreMetadata(
  ipaPath: string,
  options: OpenZipOptions = {},
): Promise<StoreMetadata | undefined> {
  const archive = await openZip(ipaPath, options);
  try {
    const entry = archive.find(METADATA_ENTRY);
    if (entry === undefined || entry.isDirectory || entry.isSymlink) return undefined;
    const dict = parsePlistDict(await archive.readEntry(entry, MAX_METADATA_BYTES), METADATA_ENTRY);
    const appVerId = storeIdOf(dict.softwareVersionExternalIdentifier);
    const appId = storeIdOf(dict.itemId);
    const version = readString(dict, 'bundleShortVersionString');
    const bundleId = readString(dict, 'softwareVersionBundleId');
    return {
      ...(appVerId !== undefined ? { appVerId } : {}),
      ...(version ? { version } : {}),
      ...(bundleId ? { bundleId } : {}),
      ...(appId !== undefined ? { appId } : {}),
    };
  } finally {
    archive.close();
  }
}
