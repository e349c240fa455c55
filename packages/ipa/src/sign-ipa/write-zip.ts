import type { ZipArchive, ZipEntry } from '../zip/index.js';
import type { SignedZipWriter } from '../zip/writer.js';

/** Copies every entry `keep` accepts as it is stored (directories included), in archive order. */
export async function copyUnchanged(writer: SignedZipWriter, archive: ZipArchive, keep: (entry: ZipEntry) => boolean): Promise<void> {
  for (const entry of archive.entries) {
    if (!keep(entry)) continue;
    if (entry.isDirectory) await writer.addDirectory(entry.name, entry.unixMode);
    else await writer.copy(entry);
  }
}
