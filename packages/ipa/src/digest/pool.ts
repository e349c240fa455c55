/**
 * Digests (SHA-1 and SHA-256) of many zip entries' contents, read straight from the file: each
 * entry's stored bytes go through createEntryDigests (inflated on libuv's pool, hashed here).
 * Signing digests its resources in the pass that copies them instead (sign-ipa.ts); this is for
 * callers that only need the digests.
 */
import { open } from 'node:fs/promises';
import { IpaError } from '../errors.js';
import { createBlockReader, gridChunks } from '../zip/block-reader.js';
import { centralFieldsOf, type ZipEntry } from '../zip/index.js';
import { LOCAL_SIGNATURE } from '../zip/records.js';
import { createEntryDigests, type FileDigests } from './entry-digests.js';

export type { FileDigests } from './entry-digests.js';

export interface DigestOptions {
  /** Deflated entries inflating at once on libuv's pool (three by default). */
  workers?: number;
  /** Called as entries finish with the count so far. */
  onProgress?: (done: number, total: number) => void;
}

/** Digests of `entries` (regular files of the archive at `path`), by entry name. */
export async function digestEntries(path: string, entries: readonly ZipEntry[], options: DigestOptions = {}): Promise<Map<string, FileDigests>> {
  const handle = await open(path, 'r');
  try {
    const block = createBlockReader(handle);
    const digests = createEntryDigests({
      ...(options.workers === undefined ? {} : { inflatesInFlight: options.workers }),
      ...(options.onProgress === undefined ? {} : { onProgress: (done: number) => options.onProgress!(done, entries.length) }),
    });
    // In file order, so the block reader reads ahead instead of seeking back and forth.
    const inFileOrder = [...entries].sort((a, b) => centralFieldsOf(a).relativeOffsetOfLocalHeader - centralFieldsOf(b).relativeOffsetOfLocalHeader);
    for (const entry of inFileOrder) {
      const start = await entryDataStart(block, entry);
      const sink = await digests.begin(entry);
      for (const [at, length] of gridChunks(start, start + entry.compressedSizeBytes)) await sink.push(await block.read(at, length));
      sink.end();
    }
    return await digests.finish();
  } finally {
    await handle.close();
  }
}

/** Where an entry's stored bytes start: after its local header's name and extra field (APPNOTE 4.3.7). */
export async function entryDataStart(block: { read(offset: number, length: number): Promise<Buffer> }, entry: ZipEntry): Promise<number> {
  const offset = centralFieldsOf(entry).relativeOffsetOfLocalHeader;
  const header = await block.read(offset, 30);
  if (header.readUInt32LE(0) !== LOCAL_SIGNATURE) {
    throw new IpaError('ZIP_INVALID', `Expected a local file header for "${entry.name}" at offset ${offset}, found 0x${header.readUInt32LE(0).toString(16)}.`);
  }
  return offset + 30 + header.readUInt16LE(26) + header.readUInt16LE(28);
}
