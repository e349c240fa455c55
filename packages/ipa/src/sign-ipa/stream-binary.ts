/**
 * Signs a binary too large to hold: inflates it to a temporary file (spoolBinary, which may run
 * ahead, while other entries are copied), reads it through a window and signs it straight into the
 * output zip, keeping only its digests.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, open, rm, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32, createInflateRaw } from 'node:zlib';
import type { FileDigests } from '../digest/index.js';
import { entryDataStart } from '../digest/pool.js';
import { IpaError } from '../errors.js';
import type { ByteReader } from '../macho/reader.js';
import type { PlistObject } from '../plist.js';
import { CHUNK_BYTES } from '../sign/macho-sign-stream.js';
import { readEmbeddedEntitlementsAt } from '../sign/read-signature.js';
import { createBlockReader, gridChunks } from '../zip/block-reader.js';
import { collectYoung, discard } from '../zip/discard.js';
import type { ZipArchive, ZipEntry } from '../zip/index.js';
import type { ZipEntryWriter } from '../zip/writer.js';
import type { CodeRecorder, KeptCode } from './code-cache.js';
import type { MachOSigner, MachOSignRequest } from './signer.js';

const READ_WINDOW_BYTES = 1024 * 1024;
// Inflated pieces on their way to the spool file: small, since each is a fresh buffer.
const SPOOL_CHUNK_BYTES = 256 * 1024;

export interface StreamedBinary {
  readonly cdhash: Buffer;
  /** The signed file's digests, when they were asked for (another bundle seals the file). */
  readonly digests?: FileDigests;
}

/** A binary inflated to a temporary file, read back through a window (the buffer a read answers is reused by the next). */
export interface SpooledBinary extends ByteReader {
  /** Deletes the temporary file. */
  close(): Promise<void>;
}

/** Inflates an entry to a temporary file (checking its size and CRC-32) for signBinaryStreaming. */
export async function spoolBinary(archive: ZipArchive, entry: ZipEntry): Promise<SpooledBinary> {
  const spoolDir = await mkdtemp(join(tmpdir(), 'sideport-sign-'));
  let handle: FileHandle | undefined;
  const close = async (): Promise<void> => {
    await handle?.close().catch(() => undefined);
    await rm(spoolDir, { recursive: true, force: true });
  };
  try {
    handle = await open(join(spoolDir, 'binary'), 'w+');
    await spool(archive, entry, handle);
  } catch (err) {
    await close();
    throw err;
  }
  const file = handle;
  const readInto = async (buffer: Buffer, offset: number, length: number): Promise<Buffer> => {
    const { bytesRead } = await file.read(buffer, 0, length, offset);
    return buffer.subarray(0, bytesRead);
  };
  // The signer copies or parses what it reads before reading again, so two buffers serve: the
  // one answered, and the other, into which the range after it is read meanwhile (the signer
  // mostly reads on, and hashes a chunk while the next one is read).
  const buffers = [Buffer.alloc(READ_WINDOW_BYTES), Buffer.alloc(READ_WINDOW_BYTES)] as const;
  let answered = 1;
  let ahead: { offset: number; length: number; bytes: Promise<Buffer> } | undefined;
  return {
    sizeBytes: entry.uncompressedSizeBytes,
    async read(offset, length) {
      if (length > READ_WINDOW_BYTES) return readInto(Buffer.alloc(length), offset, length);
      const prefetched = ahead;
      ahead = undefined;
      let bytes: Buffer;
      if (prefetched !== undefined && prefetched.offset === offset && prefetched.length === length) {
        bytes = await prefetched.bytes;
      } else {
        await prefetched?.bytes.catch(() => undefined);
        bytes = await readInto(buffers[answered ^ 1]!.subarray(0, length), offset, length);
      }
      answered ^= 1;
      if (bytes.length === length) {
        ahead = {
          offset: offset + length,
          length,
          bytes: readInto(buffers[answered ^ 1]!.subarray(0, length), offset + length, length),
        };
        ahead.bytes.catch(() => undefined); // a failure surfaces if that range is asked for
      }
      return bytes;
    },
    async close() {
      await ahead?.bytes.catch(() => undefined);
      await close();
    },
  };
}

/** A binary to sign as it streams: its bytes through a window, and what it was signed with. */
export interface StreamSource {
  read(offset: number, length: number): Promise<Buffer>;
  readonly sizeBytes: number;
  /** The entitlements it was signed with, when known already (kept code); read from it otherwise. */
  readonly own?: { entitlements: PlistObject | undefined };
  /** Its code after the first chunk as an earlier sign wrote it (code-cache.ts). */
  readonly kept?: KeptCode;
}

/**
 * Signs a binary into the output as it streams. `requestFor` receives the entitlements the binary
 * was signed with (undefined when it has none or they cannot be read) and answers the signing
 * request. `record` keeps what this sign writes for the next one (code-cache.ts).
 */
export async function signBinaryStreaming(
  source: StreamSource,
  entry: ZipEntry,
  writer: ZipEntryWriter,
  signer: Required<Pick<MachOSigner, 'signStream'>>,
  requestFor: (own: PlistObject | undefined) => MachOSignRequest,
  options: { digests?: boolean; record?: CodeRecorder } = {},
): Promise<StreamedBinary> {
  const read = source.read.bind(source);
  const size = source.sizeBytes;
  let own = source.own?.entitlements;
  if (source.own === undefined) {
    try {
      own = await readEmbeddedEntitlementsAt(read, size, entry.name);
    } catch {
      own = undefined; // a damaged old signature is replaced anyway
    }
  }
  const { record } = options;
  record?.start(await read(0, Math.min(size, CHUNK_BYTES)), own);
  const sha1 = options.digests ? createHash('sha1') : undefined;
  const sha256 = options.digests ? createHash('sha256') : undefined;
  let cdhash: Buffer = Buffer.alloc(0);
  await writer.addStream(
    entry.name,
    async (sink, copyDeflated) => {
      ({ cdhash } = await signer.signStream(
        read,
        size,
        requestFor(own),
        async (chunk) => {
          sha1?.update(chunk);
          sha256?.update(chunk);
          record?.sawChunk(chunk);
          await sink(chunk);
        },
        {
          ...(source.kept === undefined ? {} : { body: source.kept.body(copyDeflated) }),
          ...(record === undefined ? {} : { onSigned: record.onSigned }),
        },
      ));
    },
    {
      unixMode: entry.unixMode ?? 0o100755,
      ...(record === undefined ? {} : { onDeflated: record.onDeflated }),
    },
  );
  return { cdhash, ...(sha1 && sha256 ? { digests: { sha1: sha1.digest(), sha256: sha256.digest() } } : {}) };
}

/** Writes an entry's content to `out`, inflated from its stored bytes (inflateEntry). */
async function spool(archive: ZipArchive, entry: ZipEntry, out: FileHandle): Promise<void> {
  let position = 0;
  await inflateEntry(archive, entry, async (piece) => {
    for (let done = 0; done < piece.length;)
      done += (await out.write(piece, done, piece.length - done, position + done)).bytesWritten;
    position += piece.length;
  });
}

/**
 * Hands an entry's content to `take` in pieces, inflated from its stored bytes in 1 MiB reads (on
 * libuv's pool), checking its size and CRC-32 against its header; `take` is done with a piece
 * once its promise resolves, and answers 'stop' to read no further (nothing is checked then).
 */
export async function inflateEntry(
  archive: ZipArchive,
  entry: ZipEntry,
  take: (piece: Buffer) => Promise<void | 'stop'>,
): Promise<void> {
  if (archive.path === undefined) {
    // An archive held in memory or behind another reader: its own entry stream.
    const stream = await archive.openEntryStream(entry);
    for await (const piece of stream) {
      if ((await take(piece as Buffer)) === 'stop') {
        stream.destroy();
        return;
      }
    }
    return;
  }
  if (entry.compressionMethod !== 0 && entry.compressionMethod !== 8) {
    throw new IpaError(
      'ZIP_INVALID',
      `Expected "${entry.name}" stored or deflated, found compression method ${entry.compressionMethod}.`,
    );
  }
  const source = await open(archive.path, 'r');
  try {
    const block = createBlockReader(source);
    const start = await entryDataStart(block, entry);
    let crc = 0;
    let position = 0;
    let stopped = false;
    const checked = async (piece: Buffer): Promise<void> => {
      if (position + piece.length > entry.uncompressedSizeBytes)
        throw damaged(entry, `more than the ${entry.uncompressedSizeBytes} bytes it records`);
      crc = crc32(piece, crc);
      position += piece.length;
      if ((await take(piece)) === 'stop') stopped = true;
    };
    if (entry.compressionMethod === 0) {
      for (const [at, length] of gridChunks(start, start + entry.compressedSizeBytes)) {
        await checked(await block.read(at, length));
        if (stopped) return;
      }
    } else {
      const inflater = createInflateRaw({ chunkSize: SPOOL_CHUNK_BYTES });
      const written = (async () => {
        for await (const piece of inflater) {
          if (stopped) continue; // what zlib still answers, until it is destroyed
          await checked(piece as Buffer);
          // A piece that ends zlib's output buffer is its last: the buffer is free once taken.
          if ((piece as Buffer).byteOffset + (piece as Buffer).length === (piece as Buffer).buffer.byteLength)
            discard(piece as Buffer);
        }
      })();
      written.catch(() => undefined); // handled below; a failure may come before it is awaited
      try {
        for (const [at, length] of gridChunks(start, start + entry.compressedSizeBytes)) {
          if (stopped) break;
          const chunk = await block.read(at, length);
          // zlib reads the chunk until the write's callback; the block reader reuses it after.
          await new Promise<void>((resolve, reject) =>
            inflater.write(chunk, (err) => (err ? reject(err) : resolve())),
          );
        }
        if (stopped) {
          inflater.destroy();
          await written.catch(() => undefined);
          return;
        }
        inflater.end();
        await written;
        if (stopped) return;
      } catch (err) {
        inflater.destroy();
        // The reading side's failure says more than the write that then failed with it.
        const first: unknown = await written.then(
          () => err,
          (failure: unknown) => failure,
        );
        throw first instanceof IpaError ? first : damaged(entry, (first as Error).message);
      }
    }
    // The pieces, discarded as they were taken, go now: this thread may wait a while next.
    collectYoung();
    if (position !== entry.uncompressedSizeBytes) throw damaged(entry, `${position} bytes`);
    if (crc >>> 0 !== entry.crc32 >>> 0)
      throw damaged(entry, `CRC-32 0x${(crc >>> 0).toString(16).padStart(8, '0')}`);
  } finally {
    await source.close();
  }
}

function damaged(entry: ZipEntry, found: string): IpaError {
  return new IpaError(
    'ZIP_INVALID',
    `Expected "${entry.name}" to inflate to ${entry.uncompressedSizeBytes} bytes with CRC-32 0x${(entry.crc32 >>> 0).toString(16).padStart(8, '0')}, found ${found}: the archive is damaged.`,
  );
}
