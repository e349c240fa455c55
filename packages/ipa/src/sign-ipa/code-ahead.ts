/**
 * A version's large executable, made ready before anyone signs it (warm.ts, when the version
 * arrives): its code is inflated once, and kept as code-cache.ts keeps what a full sign writes
 * (the first chunk, the entitlements it was signed with, the page hashes from the second chunk on,
 * and those chunks deflated as the writer deflates them). The version's first sign then signs it
 * as the n-th sign does: one chunk hashed, the deflated body copied in the kernel, a new signature.
 *
 * A first sign does not do this beside its own digests: they and the copy already keep both cores
 * busy, and preparing the executable there made the sign slower than signing it after them
 * (docs/benchmarks.md).
 *
 * Only a thin binary whose code runs past its first chunk is prepared; anything else (a fat file,
 * a header this cannot plan from the first chunk, a damaged entry) answers false and is signed in
 * full, which reports what is wrong with it.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, rm, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { readMachO } from '../macho/parse.js';
import { buildXmlPlist, type PlistObject } from '../plist.js';
import { HASH_SIZE, PAGE_SIZE } from '../sign/blobs.js';
import { needsSha1 } from '../sign/digest-choice.js';
import { CHUNK_BYTES } from '../sign/macho-sign-stream.js';
import { codeLimitOf, hashPages, NO_HASHES } from '../sign/macho-sign.js';
import { readEmbeddedEntitlementsAt } from '../sign/read-signature.js';
import { discard } from '../zip/discard.js';
import type { ZipArchive, ZipEntry } from '../zip/index.js';
import { deflateChunk } from '../zip/writer.js';
import { FORMAT, keptPaths, openKeptCode, putKept, type Meta } from './code-cache.js';
import { inflateEntry } from './stream-binary.js';

// The old signature after the code is held in memory to read the entitlements from; one larger
// than this (a signature is some 52 bytes per page of code) is left to the full sign.
const MAX_TAIL_BYTES = 16 * 1024 * 1024;

/** The code's layout, known once the first chunk is in. */
interface Layout {
  readonly codeLimit: number;
  readonly withSha1: boolean;
  /** Page hashes from CHUNK_BYTES on, each kind in one buffer. */
  readonly sha1: Buffer;
  readonly sha256: Buffer;
  /** The bytes from the code limit to the end of the file: the old signature. */
  readonly tail: Buffer;
}

/**
 * Keeps `entry`'s code in `cacheDir` (code-cache.ts) from the archive, unless it is kept already;
 * answers whether it is kept. `appNeedsSha1`: the app supports an iOS that reads SHA-1
 * CodeDirectories (digest-choice.ts), so the SHA-1 page hashes are kept too. `level`: the writer's
 * deflate level.
 */
export async function keepCodeAhead(
  cacheDir: string,
  archive: ZipArchive,
  entry: ZipEntry,
  options: { appNeedsSha1: boolean; level: number },
): Promise<boolean> {
  const kept = keptPaths(cacheDir, entry);
  const size = entry.uncompressedSizeBytes;
  if (size <= CHUNK_BYTES) return false;
  const already = await openKeptCode(cacheDir, entry);
  if (already !== undefined) {
    await already.close();
    return true;
  }
  const temporary = `${kept.deflated}.${randomBytes(6).toString('hex')}.tmp`;
  let body: FileHandle | undefined;
  try {
    await mkdir(join(cacheDir, 'code'), { recursive: true });
    body = await open(temporary, 'w');
    const prepared = await prepare(archive, entry, body, options);
    await body.close();
    body = undefined;
    if (prepared === undefined) return false;
    await putKept(kept, temporary, prepared.front, prepared.meta);
    return true;
  } catch {
    return false; // signed in full, which says what is wrong
  } finally {
    await body?.close().catch(() => undefined);
    await rm(temporary, { force: true }).catch(() => undefined);
  }
}

async function prepare(
  archive: ZipArchive,
  entry: ZipEntry,
  body: FileHandle,
  options: { appNeedsSha1: boolean; level: number },
): Promise<{ front: Buffer; meta: Meta } | undefined> {
  const size = entry.uncompressedSizeBytes;
  const head = Buffer.alloc(CHUNK_BYTES);
  let layout: Layout | undefined;
  let position = 0;
  // The chunk being filled, from `chunkAt`. One chunk deflates at a time (on libuv's pool): the
  // digests beside this keep the other core busy, and each more in flight would hold some 2.5 MB.
  const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
  let chunkAt = CHUNK_BYTES;
  let chunkFill = 0;
  let compressedBytes = 0;
  let bodyCrc = 0;
  let bodyBytes = 0;

  /** Hashes, counts, deflates and writes the chunk filled so far (the code limit may end it early). */
  const finishChunk = async (to: Layout): Promise<void> => {
    const bytes = chunk.subarray(0, chunkFill);
    const at = (chunkAt - CHUNK_BYTES) / PAGE_SIZE;
    if (to.withSha1) hashPages(bytes, 'sha1', to.sha1, at * HASH_SIZE.sha1);
    hashPages(bytes, 'sha256', to.sha256, at * HASH_SIZE.sha256);
    bodyCrc = crc32(bytes, bodyCrc);
    bodyBytes += bytes.length;
    const parts = await deflateChunk(bytes, options.level);
    for (const part of parts) {
      for (let done = 0; done < part.length;)
        done += (await body.write(part, done, part.length - done, compressedBytes + done)).bytesWritten;
      compressedBytes += part.length;
    }
    if (parts[0] !== undefined) discard(parts[0]);
    chunkAt += chunkFill;
    chunkFill = 0;
  };
  /** Copies `bytes` (content from `from`) into the body's chunks, up to the code limit. */
  const toBody = async (to: Layout, bytes: Buffer, from: number): Promise<void> => {
    let at = Math.max(from, CHUNK_BYTES);
    const end = Math.min(from + bytes.length, to.codeLimit);
    while (at < end) {
      const room = Math.min(CHUNK_BYTES - chunkFill, to.codeLimit - chunkAt - chunkFill);
      const length = Math.min(room, end - at);
      bytes.copy(chunk, chunkFill, at - from, at - from + length);
      chunkFill += length;
      at += length;
      if (chunkFill === CHUNK_BYTES || chunkAt + chunkFill === to.codeLimit) await finishChunk(to);
    }
  };

  await inflateEntry(archive, entry, async (piece) => {
    const from = position;
    position += piece.length;
    if (from < CHUNK_BYTES) piece.copy(head, from, 0, Math.min(piece.length, CHUNK_BYTES - from));
    if (layout === undefined && position >= CHUNK_BYTES) {
      layout = await planFrom(head, size, entry.name, options.appNeedsSha1);
      if (layout === undefined) return 'stop';
    }
    if (layout === undefined) return;
    await toBody(layout, piece, from);
    if (position > layout.codeLimit) {
      const start = Math.max(from, layout.codeLimit);
      piece.copy(layout.tail, start - layout.codeLimit, start - from);
    }
  });
  if (layout === undefined) return undefined;
  // A file never signed ends up to 15 bytes short of its code limit: zeros, as the signer reads them.
  if (size < layout.codeLimit) await toBody(layout, Buffer.alloc(layout.codeLimit - size), size);
  if (bodyBytes !== layout.codeLimit - CHUNK_BYTES) return undefined;
  const own = await ownEntitlements(head, layout, size, entry.name);
  if (own === 'out of reach') return undefined;
  const sha1 = layout.withSha1 ? layout.sha1 : NO_HASHES;
  return {
    front: Buffer.concat([head, sha1, layout.sha256]),
    meta: {
      format: FORMAT,
      codeLimit: layout.codeLimit,
      headBytes: head.length,
      sha1Bytes: sha1.length,
      sha256Bytes: layout.sha256.length,
      compressedBytes,
      uncompressedBytes: bodyBytes,
      crc: bodyCrc >>> 0,
      entitlements: own === undefined ? null : buildXmlPlist(own),
    },
  };
}

/** The layout of a thin binary planned from its first chunk; undefined for anything else. */
async function planFrom(
  head: Buffer,
  size: number,
  where: string,
  appNeedsSha1: boolean,
): Promise<Layout | undefined> {
  let file;
  try {
    file = await readMachO({ sizeBytes: size, read: readWithin(head) }, where);
  } catch {
    return undefined;
  }
  const slice = file.slices[0];
  if (file.isFat || slice === undefined) return undefined;
  const codeLimit = codeLimitOf(slice);
  if (codeLimit === undefined || codeLimit <= CHUNK_BYTES || size - codeLimit > MAX_TAIL_BYTES)
    return undefined;
  const bodyPages = Math.ceil(codeLimit / PAGE_SIZE) - CHUNK_BYTES / PAGE_SIZE;
  const withSha1 = appNeedsSha1 || needsSha1(file.slices);
  return {
    codeLimit,
    withSha1,
    sha1: withSha1 ? Buffer.alloc(bodyPages * HASH_SIZE.sha1) : NO_HASHES,
    sha256: Buffer.alloc(bodyPages * HASH_SIZE.sha256),
    tail: Buffer.alloc(Math.max(0, size - codeLimit)),
  };
}

/**
 * The entitlements the binary was signed with, read from its header and its old signature, as the
 * full sign reads them (none when they cannot be read); 'out of reach' when reading them needs
 * bytes outside those two.
 */
async function ownEntitlements(
  head: Buffer,
  layout: Layout,
  size: number,
  where: string,
): Promise<PlistObject | undefined | 'out of reach'> {
  let outOfReach = false;
  const inHead = readWithin(head);
  const read = async (offset: number, length: number): Promise<Buffer> => {
    if (offset >= layout.codeLimit && offset + length <= size)
      return layout.tail.subarray(offset - layout.codeLimit, offset - layout.codeLimit + length);
    try {
      return await inHead(offset, length);
    } catch (err) {
      outOfReach = true;
      throw err;
    }
  };
  try {
    const own = await readEmbeddedEntitlementsAt(read, size, where);
    return outOfReach ? 'out of reach' : own;
  } catch {
    return outOfReach ? 'out of reach' : undefined; // a damaged old signature is replaced anyway
  }
}

/** Reads of the first chunk only. */
function readWithin(head: Buffer): (offset: number, length: number) => Promise<Buffer> {
  return async (offset, length) => {
    if (offset + length > head.length) throw new Error(`bytes ${offset}+${length} are past the first chunk`);
    return head.subarray(offset, offset + length);
  };
}
