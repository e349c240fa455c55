import type { ZipArchive, ZipEntry } from '../zip/index.js';
import type { SignedZipWriter } from '../zip/writer.js';

/**
 * Copies every entry `keep` accepts as it is stored (directories included), in archive order;
 * stops, with the signal's reason, once `signal` is aborted.
 */
export async function copyUnchanged(
  writer: SignedZipWriter,
  archive: ZipArchive,
  keep: (entry: ZipEntry) => boolean,
  signal?: AbortSignal,
): Promise<void> {
  await writer.copyAll(archive.entries.filter(keep), signal);
}
