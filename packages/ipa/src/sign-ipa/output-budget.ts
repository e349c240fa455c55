/**
 * The most a sign may write, from the input's real size: entries copied as they are keep their
 * stored bytes, and only what signing adds comes on top. An input that still made signing write
 * more (its bytes counted twice, code that inflates far beyond its stored size) is refused rather
 * than multiplied onto the disk.
 */
import type { ZipEntry } from '../zip/index.js';

// Signed code is deflated again at level 1 where the input's may be at 9: real code grows by
// 10-30% (text and tables deflated a hundredfold by level 9 would grow far more).
const CODE_GROWTH = 2;
// Each 4 KiB page is hashed in a SHA-1 and a SHA-256 CodeDirectory.
const PAGE_BYTES = 4096;
const HASH_BYTES_PER_PAGE = 20 + 32;
// The rest of a signature, per binary: CMS with its certificate chain, requirements,
// entitlements and special slots, for each of a few slices.
const SIGNATURE_FIXED_BYTES = 256 * 1024;
// A CodeResources entry per sealed file: its path and two base64 digests in XML.
const SEAL_BYTES_PER_FILE = 400;
// Local and central headers of an entry may gain zip64 fields.
const HEADER_GROWTH_PER_ENTRY = 128;

export interface OutputBudgetInput {
  /** The input file's size. */
  readonly inputBytes: number;
  readonly entries: readonly ZipEntry[];
  /** Entries of the input that are signed (rewritten). */
  readonly code: readonly ZipEntry[];
  /** Sizes of the files signing writes in place of entries or adds (profiles, plists, dylibs). */
  readonly addedBytes: readonly number[];
  /** Bundle directories, each sealing the files under it in a CodeResources. */
  readonly bundleDirs: readonly string[];
}

const signatureBytes = (sizeBytes: number): number =>
  Math.ceil(sizeBytes / PAGE_BYTES) * HASH_BYTES_PER_PAGE + SIGNATURE_FIXED_BYTES;

export function outputBudget(input: OutputBudgetInput): number {
  let budget =
    input.inputBytes +
    (input.entries.length + input.addedBytes.length + input.bundleDirs.length) * HEADER_GROWTH_PER_ENTRY;
  for (const entry of input.code)
    budget += CODE_GROWTH * entry.compressedSizeBytes + signatureBytes(entry.uncompressedSizeBytes);
  // Added files may be code to sign (injected dylibs, a main executable edited in memory).
  for (const sizeBytes of input.addedBytes) budget += sizeBytes + signatureBytes(sizeBytes);
  for (const dir of input.bundleDirs) {
    const prefix = `${dir}/`;
    for (const entry of input.entries)
      if (entry.name.startsWith(prefix)) budget += entry.name.length + SEAL_BYTES_PER_FILE;
    budget += input.addedBytes.length * SEAL_BYTES_PER_FILE;
  }
  return budget;
}
