import { IpaError } from '../errors.js';
import type { ZipArchive, ZipEntry } from '../zip/index.js';
import { createSignedZipWriter, type SignedZipWriter } from '../zip/writer.js';

/** Deflate level for entries signing changed: fast, since Mach-O binaries can be 100+ MB. */
const CHANGED_LEVEL = 1;

/**
 * Writes the signed IPA: entries signing did not change are copied as their raw compressed bytes
 * (no inflate/deflate round trip); changed and new entries are compressed at a fast level. The
 * archive is written beside the output and renamed into place, so a failure leaves no partial file.
 */
export async function writeSignedZip(archive: ZipArchive, output: string, replaced: ReadonlyMap<string, Buffer>) {
  if (archive.path === undefined) {
    throw new IpaError('ZIP_INVALID', 'Expected an archive opened from a file to copy entries from, found one opened from memory.');
  }
  const writer = await createSignedZipWriter(archive.path, output, { level: CHANGED_LEVEL });
  try {
    const seen = new Set<string>();
    for (const entry of archive.entries) {
      seen.add(entry.name);
      const content = replaced.get(entry.name);
      if (content) await writer.add(entry.name, content, modeOptions(entry));
      else if (entry.isDirectory) await writer.addDirectory(entry.name, entry.unixMode);
      else await writer.copy(entry);
    }
    for (const [name, content] of replaced) {
      if (!seen.has(name)) await writer.add(name, content, { unixMode: /\.dylib$/.test(name) ? 0o100755 : 0o100644 });
    }
    await writer.close();
  } catch (err) {
    await writer.abort();
    throw err;
  }
}

const modeOptions = (entry: ZipEntry) => (entry.unixMode !== undefined ? { unixMode: entry.unixMode } : {});

/** Copies every entry `keep` accepts as it is stored (directories included), in archive order. */
export async function copyUnchanged(writer: SignedZipWriter, archive: ZipArchive, keep: (entry: ZipEntry) => boolean): Promise<void> {
  for (const entry of archive.entries) {
    if (!keep(entry)) continue;
    if (entry.isDirectory) await writer.addDirectory(entry.name, entry.unixMode);
    else await writer.copy(entry);
  }
}
