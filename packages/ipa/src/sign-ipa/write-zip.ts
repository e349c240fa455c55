import type { EntryDigests } from '../digest/index.js';
import type { ZipArchive, ZipEntry } from '../zip/index.js';
import type { SignedZipWriter } from '../zip/writer.js';

export interface DigestWhileCopying {
  /** Entries whose content digests are wanted. */
  readonly entries: ReadonlySet<ZipEntry>;
  readonly digests: EntryDigests;
}

/**
 * Copies every entry `keep` accepts as it is stored (directories included), in archive order.
 * With `digest`, the entries it names are digested from the same reads: one pass over the source.
 */
export async function copyUnchanged(writer: SignedZipWriter, archive: ZipArchive, keep: (entry: ZipEntry) => boolean, digest?: DigestWhileCopying): Promise<void> {
  for (const entry of archive.entries) {
    if (!keep(entry)) continue;
    if (entry.isDirectory) {
      await writer.addDirectory(entry.name, entry.unixMode);
    } else if (digest?.entries.has(entry)) {
      const sink = await digest.digests.begin(entry);
      await writer.copy(entry, (chunk) => sink.push(chunk));
      sink.end();
    } else {
      await writer.copy(entry);
    }
  }
}
