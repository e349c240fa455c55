/**
 * What one sign of a large binary keeps for the next sign of the same version (for another user's
 * profile or certificate): the file's first chunk as it was, the entitlements it was signed with,
 * the page hashes from the second chunk on, and those chunks as the output's deflated bytes.
 * Only the first chunk changes from one sign to the next (the header edits: LC_CODE_SIGNATURE and
 * __LINKEDIT's sizes), and the signature after the code; so a later sign hashes one chunk, copies
 * the deflated body as it is, and inflates, hashes and deflates nothing else (the package README, "The n-th sign of a version").
 *
 * One folder per cache: `code/<key>.code` holds the first chunk, the hashes and the deflated
 * body, `code/<key>.json` their lengths and CRC-32. The key is the entry's name, CRC-32, sizes and
 * compression, like the resource digests' (digest/cache.ts), and the same caveat holds: the folder
 * must only hold what this package wrote.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, writeFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { buildXmlPlist, parsePlistDict, type PlistObject } from '../plist.js';
import { PAGE_SIZE, HASH_SIZE } from '../sign/blobs.js';
import { CHUNK_BYTES, type SliceBody, type StreamOptions } from '../sign/macho-sign-stream.js';
import type { ZipEntry } from '../zip/index.js';
import type { DeflatedRun, StreamEntryOptions } from '../zip/writer.js';

export const FORMAT = 1;

export interface Meta {
  format: number;
  codeLimit: number;
  headBytes: number;
  sha1Bytes: number;
  sha256Bytes: number;
  compressedBytes: number;
  uncompressedBytes: number;
  crc: number;
  /** The entitlements the binary was signed with, as XML; null when it had none or they could not be read. */
  entitlements: string | null;
}

/** A binary's kept code, open for one sign. */
export interface KeptCode {
  /** The file's first bytes as they are in the archive (the chunk the header edits fall in). */
  readonly head: Buffer;
  /** What it was signed with before, as read by the sign that kept it. */
  readonly ownEntitlements: PlistObject | undefined;
  /** The body for signMachOStream, copied into the entry being written through `copyDeflated`. */
  body(copyDeflated: (run: DeflatedRun) => Promise<void>): SliceBody;
  close(): Promise<void>;
}

/** Keeps what a full sign of a binary writes, for the next one. */
export interface CodeRecorder {
  /** The file's first chunk and own entitlements, read before it is signed. */
  start(head: Buffer, ownEntitlements: PlistObject | undefined): void;
  /** For the writer: every chunk's deflated parts. */
  readonly onDeflated: NonNullable<StreamEntryOptions['onDeflated']>;
  /** For the sink: every chunk as it goes out (for the body's CRC-32 and length). */
  sawChunk(chunk: Buffer): void;
  /** For the signer: the code limit and page hashes. */
  readonly onSigned: NonNullable<StreamOptions['onSigned']>;
  /** Writes what was kept, once the entry is written (a cache that cannot be written only costs time). */
  finish(): Promise<void>;
  /** Drops what was kept (the sign failed). */
  abandon(): Promise<void>;
}

export function codeKey(entry: ZipEntry): string {
  return createHash('sha256')
    .update(
      `sideport-code-${FORMAT}\n${entry.name}\0${entry.crc32}\0${entry.uncompressedSizeBytes}\0${entry.compressedSizeBytes}\0${entry.compressionMethod}\n`,
    )
    .digest('hex');
}

export const keptPaths = (cacheDir: string, entry: ZipEntry) => {
  const base = join(cacheDir, 'code', codeKey(entry));
  return { front: `${base}.front`, deflated: `${base}.deflated`, meta: `${base}.json` };
};

/** The kept code of a binary entry, when a sign before kept it whole; undefined otherwise. */
export async function openKeptCode(cacheDir: string, entry: ZipEntry): Promise<KeptCode | undefined> {
  const kept = keptPaths(cacheDir, entry);
  let meta: Meta;
  let front: Buffer;
  try {
    meta = JSON.parse(await readFile(kept.meta, 'utf8')) as Meta;
    front = await readFile(kept.front);
  } catch {
    return undefined; // absent or damaged: sign in full, which keeps it again
  }
  const bodyPages = Math.ceil(meta.codeLimit / PAGE_SIZE) - CHUNK_BYTES / PAGE_SIZE;
  if (
    meta.format !== FORMAT ||
    (meta.sha1Bytes !== bodyPages * HASH_SIZE.sha1 && meta.sha1Bytes !== 0) ||
    meta.sha256Bytes !== bodyPages * HASH_SIZE.sha256 ||
    front.length !== meta.headBytes + meta.sha1Bytes + meta.sha256Bytes
  )
    return undefined;
  let file: FileHandle;
  try {
    file = await open(kept.deflated, 'r');
    if ((await file.stat()).size !== meta.compressedBytes) {
      await file.close();
      return undefined;
    }
  } catch {
    return undefined;
  }
  const head = front.subarray(0, meta.headBytes);
  const sha1 = front.subarray(meta.headBytes, meta.headBytes + meta.sha1Bytes);
  const sha256 = front.subarray(meta.headBytes + meta.sha1Bytes);
  return {
    head,
    ownEntitlements: meta.entitlements === null ? undefined : parsePlistDict(Buffer.from(meta.entitlements)),
    body: (copyDeflated) => ({
      codeLimit: meta.codeLimit,
      sha1,
      sha256,
      copy: () =>
        copyDeflated({
          file,
          offset: 0,
          compressedBytes: meta.compressedBytes,
          uncompressedBytes: meta.uncompressedBytes,
          crc: meta.crc,
        }),
    }),
    close: () => file.close(),
  };
}

/**
 * Keeps a binary's code as its full sign writes it: the deflated parts of every chunk after the
 * first go to a temporary file as the writer makes them; the signature's (the last chunk) are cut
 * off at the end.
 */
export async function recordCode(cacheDir: string, entry: ZipEntry): Promise<CodeRecorder> {
  const kept = keptPaths(cacheDir, entry);
  await mkdir(join(cacheDir, 'code'), { recursive: true });
  const temporary = `${kept.deflated}.${randomBytes(6).toString('hex')}.tmp`;
  const body = await open(temporary, 'w');
  let head: Buffer | undefined;
  let own: PlistObject | undefined;
  let signed: { codeLimit: number; sha1: Buffer; sha256: Buffer } | undefined;
  // Where each chunk's deflated parts end in the temporary file, by chunk index (from 1).
  const deflatedEnds: number[] = [];
  let deflated = 0;
  let failed = false;
  // Chunks seen by the sink; CRC-32 and length of chunks 1.. so far, and before the last one.
  let chunks = 0;
  let crc = 0;
  let length = 0;
  let bodyCrc = 0;
  let bodyLength = 0;
  const abandon = async () => {
    await body.close().catch(() => undefined);
    await rm(temporary, { force: true });
  };
  return {
    start(first, ownEntitlements) {
      head = Buffer.from(first);
      own = ownEntitlements;
    },
    async onDeflated(index, parts) {
      if (index === 0 || failed) return;
      try {
        for (const part of parts) {
          await body.write(part, 0, part.length, deflated);
          deflated += part.length;
        }
        deflatedEnds[index] = deflated;
      } catch {
        failed = true; // a cache that cannot be written only costs time
      }
    },
    sawChunk(chunk) {
      if (chunks++ === 0) return; // the first chunk is not the body's
      bodyCrc = crc;
      bodyLength = length;
      crc = crc32(chunk, crc);
      length += chunk.length;
    },
    async onSigned(slice) {
      signed = slice;
    },
    async finish() {
      try {
        if (failed || signed === undefined || head === undefined) return;
        // Chunks 1 .. codeChunks-1 are the body; the sink's last chunk was the signature.
        const codeChunks = Math.ceil(signed.codeLimit / CHUNK_BYTES);
        const compressedBytes = deflatedEnds[codeChunks - 1];
        if (chunks !== codeChunks + 1 || codeChunks < 2 || compressedBytes === undefined) return;
        await body.truncate(compressedBytes);
        await body.close();
        const firstPages = CHUNK_BYTES / PAGE_SIZE;
        const sha1 = signed.sha1.subarray(firstPages * HASH_SIZE.sha1);
        const sha256 = signed.sha256.subarray(firstPages * HASH_SIZE.sha256);
        const meta: Meta = {
          format: FORMAT,
          codeLimit: signed.codeLimit,
          headBytes: head.length,
          sha1Bytes: sha1.length,
          sha256Bytes: sha256.length,
          compressedBytes,
          uncompressedBytes: bodyLength,
          crc: bodyCrc >>> 0,
          entitlements: own === undefined ? null : buildXmlPlist(own),
        };
        await putKept(kept, temporary, Buffer.concat([head, sha1, sha256]), meta);
      } catch {
        // a cache that cannot be written only costs time
      } finally {
        await abandon();
      }
    },
    abandon,
  };
}

/**
 * Puts a binary's kept code in place: the deflated body written to `temporary`, then the front
 * (first chunk and page hashes), and the description last, so a reader that finds it finds the
 * rest complete. A failure leaves no front or description of its own behind.
 */
export async function putKept(
  kept: ReturnType<typeof keptPaths>,
  temporary: string,
  front: Buffer,
  meta: Meta,
): Promise<void> {
  try {
    await writeFile(`${temporary}.front`, front);
    await rename(`${temporary}.front`, kept.front);
    await rename(temporary, kept.deflated);
    await writeFile(`${temporary}.json`, JSON.stringify(meta));
    await rename(`${temporary}.json`, kept.meta);
  } catch (err) {
    await rm(`${temporary}.front`, { force: true });
    await rm(`${temporary}.json`, { force: true });
    throw err;
  }
}
