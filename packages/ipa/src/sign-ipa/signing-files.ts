/**
 * The IPA's files as signing sees them: the archive's, the ones the mode replaces or adds (until
 * they are written), and those already written after the copied entries, kept by their digests
 * only, so signed code leaves memory once it is in the output.
 */
import type { FileDigests } from '../digest/index.js';
import type { ZipArchive } from '../zip/index.js';
import type { ZipEntryWriter } from '../zip/writer.js';
import { digestBuffer } from './hashes.js';

export interface SigningFiles {
  readonly archive: ZipArchive;
  /** Where signed code and new files go: after the copied entries. */
  readonly out: ZipEntryWriter;
  /** Files the mode replaces or adds, by archive path, until they are written. */
  readonly replaced: Map<string, Buffer>;
  /** Files written, by archive path: their digests, for the bundles that seal them. */
  readonly written: Map<string, FileDigests>;
  /** Whether some bundle seals the file: all but the app's own executable. */
  sealedByAnother(name: string): boolean;
  /** A file's content now: the replacement, else the archive's (up to the largest binary held). */
  read(name: string): Promise<Buffer>;
  /** Writes a file to the output, keeping its digests when a bundle seals it. */
  write(name: string, bytes: Buffer): Promise<void>;
}

export function createSigningFiles(options: {
  archive: ZipArchive;
  out: ZipEntryWriter;
  replaced: Map<string, Buffer>;
  /** The app's own executable: sealed by no bundle, so never digested. */
  appExecutable: string | undefined;
  maxBinaryBytes: number;
}): SigningFiles {
  const { archive, out, replaced } = options;
  const written = new Map<string, FileDigests>();
  const sealedByAnother = (name: string) => name !== options.appExecutable;
  return {
    archive,
    out,
    replaced,
    written,
    sealedByAnother,
    read: async (name) =>
      replaced.get(name) ?? archive.readEntry(archive.find(name)!, options.maxBinaryBytes),
    async write(name, bytes) {
      if (sealedByAnother(name)) written.set(name, digestBuffer(bytes));
      replaced.delete(name);
      const mode = archive.find(name)?.unixMode ?? (/\.dylib$/.test(name) ? 0o100755 : 0o100644);
      await out.add(name, bytes, { unixMode: mode });
    },
  };
}
