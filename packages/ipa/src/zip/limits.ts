/** Caps that keep a hostile archive from exhausting memory or disk. All configurable. */
export interface ZipLimits {
  /** Refuse an entry whose uncompressed/compressed ratio exceeds this... */
  maxCompressionRatio: number;
  /** ...when it also inflates to more than this many bytes (small files compress well legitimately). */
  compressionRatioMinBytes: number;
  /**
   * Refuse an archive whose entries together inflate to more than this many times their stored
   * bytes (many entries each just under the per-entry threshold)...
   */
  maxArchiveCompressionRatio: number;
  /** ...when they inflate to more than this many bytes in all. */
  archiveRatioMinBytes: number;
  /** Refuse an archive whose entries add up to more than this, uncompressed. */
  maxTotalUncompressedBytes: number;
  /** Refuse an archive with more entries than this. */
  maxEntryCount: number;
  /** A symlink entry's content is its target path; PATH_MAX on Darwin is 1024. */
  maxSymlinkTargetBytes: number;
}

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/**
 * Real IPAs deflate about 2-5x as a whole (code 2-3x, text and JSON up to 10x, images and media
 * not at all); 40x leaves any real app far inside while 4,000 entries of 1 MiB of zeros (about
 * 1,000x) are refused before anything inflates them.
 */
export const MAX_ARCHIVE_COMPRESSION_RATIO = 40;

export const defaultZipLimits: Readonly<ZipLimits> = Object.freeze({
  maxCompressionRatio: 200,
  compressionRatioMinBytes: 1 * MiB,
  maxArchiveCompressionRatio: MAX_ARCHIVE_COMPRESSION_RATIO,
  // Small archives of a few text files may well deflate 40x; what they inflate to is harmless.
  archiveRatioMinBytes: 64 * MiB,
  // The largest App Store games are a few GiB; 16 GiB leaves room without allowing absurd totals.
  maxTotalUncompressedBytes: 16 * GiB,
  maxEntryCount: 500_000,
  maxSymlinkTargetBytes: 1024,
});

export function resolveZipLimits(overrides?: Partial<ZipLimits>): ZipLimits {
  return { ...defaultZipLimits, ...overrides };
}
