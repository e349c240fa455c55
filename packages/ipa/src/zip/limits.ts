/** Caps that keep a hostile archive from exhausting memory or disk. All configurable. */
export interface ZipLimits {
  /** Refuse an entry whose uncompressed/compressed ratio exceeds this... */
  maxCompressionRatio: number;
  /** ...when it also inflates to more than this many bytes (small files compress well legitimately). */
  compressionRatioMinBytes: number;
  /** Refuse an archive whose entries add up to more than this, uncompressed. */
  maxTotalUncompressedBytes: number;
  /** Refuse an archive with more entries than this. */
  maxEntryCount: number;
  /** A symlink entry's content is its target path; PATH_MAX on Darwin is 1024. */
  maxSymlinkTargetBytes: number;
}

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

export const defaultZipLimits: Readonly<ZipLimits> = Object.freeze({
  maxCompressionRatio: 200,
  compressionRatioMinBytes: 1 * MiB,
  // The largest App Store games are a few GiB; 16 GiB leaves room without allowing absurd totals.
  maxTotalUncompressedBytes: 16 * GiB,
  maxEntryCount: 500_000,
  maxSymlinkTargetBytes: 1024,
});

export function resolveZipLimits(overrides?: Partial<ZipLimits>): ZipLimits {
  return { ...defaultZipLimits, ...overrides };
}
