import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { Readable, Writable } from 'node:stream';
import { configure, Uint8ArrayReader, ZipWriter } from '@zip.js/zip.js';
import type { ZipArchive, ZipEntry } from '../zip/index.js';

// Node has no web workers to hand compression to; compress in this thread.
configure({ useWebWorkers: false });

/** Deflate level for entries signing changed: fast, since Mach-O binaries can be 100+ MB. */
const CHANGED_LEVEL = 1;

/**
 * Writes the signed IPA: entries signing did not change are copied as their raw compressed bytes
 * (no inflate/deflate round trip); changed and new entries are compressed at a fast level. The
 * archive is written beside the output and renamed into place, so a failure leaves no partial file.
 */
export async function writeSignedZip(archive: ZipArchive, output: string, replaced: ReadonlyMap<string, Buffer>) {
  const temporary = `${output}.partial-${process.pid}`;
  const file = createWriteStream(temporary);
  const writer = new ZipWriter(Writable.toWeb(file) as WritableStream, { keepOrder: true, level: CHANGED_LEVEL });
  try {
    const seen = new Set<string>();
    for (const entry of archive.entries) {
      seen.add(entry.name);
      const content = replaced.get(entry.name);
      if (content) await writer.add(entry.name, new Uint8ArrayReader(content), modeOptions(entry));
      else await copyRaw(archive, entry, writer);
    }
    for (const [name, content] of replaced) {
      if (!seen.has(name)) await writer.add(name, new Uint8ArrayReader(content), { unixMode: 0o100644 });
    }
    await writer.close();
    await rename(temporary, output);
  } catch (err) {
    file.destroy();
    await rm(temporary, { force: true });
    throw err;
  }
}

const modeOptions = (entry: ZipEntry) => (entry.unixMode !== undefined ? { unixMode: entry.unixMode } : {});

async function copyRaw(archive: ZipArchive, entry: ZipEntry, writer: ZipWriter<unknown>) {
  if (entry.isDirectory) {
    await writer.add(entry.name, undefined, { directory: true, ...modeOptions(entry) });
    return;
  }
  const raw = await archive.openEntryStream(entry, { raw: true });
  await writer.add(entry.name, Readable.toWeb(raw) as ReadableStream, {
    passThrough: true,
    uncompressedSize: entry.uncompressedSizeBytes,
    crc32: entry.crc32,
    compressionMethod: entry.compressionMethod,
    ...modeOptions(entry),
  });
}
