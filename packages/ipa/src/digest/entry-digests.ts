/**
 * SHA-1 and SHA-256 of zip entries' contents, computed from their stored bytes as a reader passes
 * them (the same pass that copies them into the signed IPA): stored entries are hashed as they
 * go by; deflated ones are inflated on libuv's thread pool (zlib's asynchronous API) and hashed on
 * the main thread as the inflated pieces come back, so inflating one piece overlaps hashing the
 * last. Every entry's size and CRC-32 are checked against its header (zlib checks those of deflated
 * entries).
 */
import { createHash, type Hash } from 'node:crypto';
import { crc32, createGunzip, gunzip, type Gunzip } from 'node:zlib';
import { IpaError } from '../errors.js';
import type { ZipEntry } from '../zip/index.js';

export interface FileDigests {
  readonly sha1: Buffer;
  readonly sha256: Buffer;
}

/** Takes one entry's stored bytes in order. */
export interface DigestSink {
  /** The next piece; the caller may reuse `chunk` once the promise resolves. */
  push(chunk: Buffer): Promise<void>;
  /** All pieces were pushed; the digests arrive later (see EntryDigests.finish). */
  end(): void;
}

export interface EntryDigests {
  /** A sink for `entry`; waits while too much inflating is already under way. */
  begin(entry: ZipEntry): Promise<DigestSink>;
  /** Every begun entry's digests, by name, once all are done; rejects with the first failure. */
  finish(): Promise<Map<string, FileDigests>>;
}

export interface EntryDigestsOptions {
  /** Deflated entries inflating at once (three by default: libuv's pool has four threads, and writes need one). */
  inflatesInFlight?: number;
  /** Called as entries finish, with the count so far. */
  onProgress?: (done: number) => void;
}

// Entries up to this size inflate in one call; larger ones stream through an inflater.
const WHOLE_BYTES = 256 * 1024;
const INFLATE_CHUNK_BYTES = 256 * 1024;
const DEFAULT_INFLATES_IN_FLIGHT = 3;

export function createEntryDigests(options: EntryDigestsOptions = {}): EntryDigests {
  const results = new Map<string, FileDigests>();
  const limit = Math.max(1, options.inflatesInFlight ?? DEFAULT_INFLATES_IN_FLIGHT);
  const pending = new Set<Promise<void>>();
  let failure: unknown;
  let done = 0;
  const scratch = createScratchBuffers(WHOLE_BYTES, limit);

  const track = (entry: ZipEntry, work: Promise<FileDigests>): void => {
    const settled = work.then(
      (digests) => {
        results.set(entry.name, digests);
        options.onProgress?.(++done);
      },
      (err: unknown) => {
        failure ??= err;
      },
    );
    const tracked = settled.finally(() => pending.delete(tracked));
    pending.add(tracked);
  };
  const throwIfFailed = (): void => {
    if (failure !== undefined) throw failure;
  };

  return {
    async begin(entry) {
      throwIfFailed();
      if (entry.compressionMethod !== 0 && entry.compressionMethod !== 8) {
        throw invalid(entry, `unsupported compression method ${entry.compressionMethod}`);
      }
      if (entry.compressionMethod === 0) return storedSink(entry, track);
      while (pending.size >= limit) await Promise.race(pending);
      throwIfFailed();
      return entry.uncompressedSizeBytes <= WHOLE_BYTES ? wholeSink(entry, track, scratch) : streamedSink(entry, track);
    },
    async finish() {
      while (pending.size > 0) await Promise.race(pending);
      throwIfFailed();
      return results;
    },
  };
}

/**
 * Running SHA-1, SHA-256 and length of an entry's content, and its CRC-32 unless `checkCrc` is
 * false (zlib checks it, see gzipFrame).
 */
function contentHasher(entry: ZipEntry, checkCrc = true) {
  const sha1: Hash = createHash('sha1');
  const sha256: Hash = createHash('sha256');
  let crc = 0;
  let length = 0;
  return {
    update(bytes: Buffer): void {
      sha1.update(bytes);
      sha256.update(bytes);
      if (checkCrc) crc = crc32(bytes, crc);
      length += bytes.length;
    },
    digest(): FileDigests {
      if (length !== entry.uncompressedSizeBytes) throw invalid(entry, `inflated to ${length} bytes, expected ${entry.uncompressedSizeBytes}`);
      if (checkCrc && crc >>> 0 !== entry.crc32 >>> 0) throw invalid(entry, `CRC-32 0x${(crc >>> 0).toString(16)}, expected 0x${(entry.crc32 >>> 0).toString(16)}`);
      return { sha1: pooled(sha1.digest()), sha256: pooled(sha256.digest()) };
    },
  };
}

/**
 * A copy in Node's shared 8 KiB pool: a digest from hash.digest() has an ArrayBuffer of its own,
 * and an IPA's tens of thousands of them are kept until CodeResources is written.
 */
const pooled = (digest: Buffer): Buffer => Buffer.from(digest);

type Track = (entry: ZipEntry, work: Promise<FileDigests>) => void;

interface ScratchBuffers {
  /** A buffer of at least `length` bytes, to give back with `release` once zlib is done with it. */
  take(length: number): { buffer: Buffer; release: () => void };
}

/**
 * A few reusable input buffers for small entries: thousands of fresh ones would linger until the
 * collector noticed them, tens of MB at a time.
 */
function createScratchBuffers(size: number, count: number): ScratchBuffers {
  const free: Buffer[] = [];
  return {
    take(length) {
      if (length > size) return { buffer: Buffer.allocUnsafe(length), release: () => undefined };
      const buffer = free.pop() ?? Buffer.allocUnsafe(size);
      let released = false;
      return {
        buffer,
        release: () => {
          if (released) return;
          released = true;
          if (free.length < count) free.push(buffer);
        },
      };
    },
  };
}

/** Stored bytes are the content: hashed as they pass. */
function storedSink(entry: ZipEntry, track: Track): DigestSink {
  const hasher = contentHasher(entry);
  return {
    push(chunk) {
      hasher.update(chunk);
      return Promise.resolve();
    },
    end() {
      let digests: FileDigests;
      try {
        digests = hasher.digest();
      } catch (err) {
        return track(entry, Promise.reject(err));
      }
      track(entry, Promise.resolve(digests));
    },
  };
}

/** A small deflated entry: its stored bytes gathered, inflated in one call on the pool. */
function wholeSink(entry: ZipEntry, track: Track, scratch: ScratchBuffers): DigestSink {
  const frame = gzipFrame(entry);
  const { buffer: framed, release } = scratch.take(frame.header.length + entry.compressedSizeBytes + frame.trailer.length);
  let filled = frame.header.copy(framed, 0);
  return {
    push(chunk) {
      filled += chunk.copy(framed, filled);
      return Promise.resolve();
    },
    end() {
      filled += frame.trailer.copy(framed, filled);
      track(
        entry,
        new Promise<FileDigests>((resolve, reject) => {
          if (entry.compressedSizeBytes === 0) {
            // No deflate data at all: empty content, which only an empty entry may have.
            release();
            const hasher = contentHasher(entry);
            return resolve(hasher.digest());
          }
          // One output buffer with a byte to spare, so zlib neither grows nor joins pieces.
          const chunkSize = Math.max(64, entry.uncompressedSizeBytes + 1);
          gunzip(framed.subarray(0, filled), { chunkSize, maxOutputLength: entry.uncompressedSizeBytes + 1 }, (err, content) => {
            release();
            if (err) return reject(invalid(entry, err.message));
            try {
              const hasher = contentHasher(entry, false);
              hasher.update(content);
              resolve(hasher.digest());
            } catch (failure) {
              reject(failure);
            }
          });
        }),
      );
    },
  };
}

/**
 * A deflated entry's stored bytes are a raw deflate stream; framed as a gzip member (RFC 1952: a
 * 10-byte header, then CRC-32 and size as the trailer) with the entry's recorded CRC-32 and size,
 * zlib checks both as it inflates, on libuv's pool, instead of the main thread.
 */
function gzipFrame(entry: ZipEntry): { header: Buffer; trailer: Buffer } {
  // ID1 ID2, CM=8 (deflate), FLG=0, MTIME=0, XFL=0, OS=255 (unknown)
  const header = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(entry.crc32 >>> 0, 0);
  trailer.writeUInt32LE(entry.uncompressedSizeBytes % 2 ** 32, 4);
  return { header, trailer };
}

/**
 * A large deflated entry streams through an inflater. Inflated pieces are hashed a microtask
 * after they arrive, once zlib has sent the next piece to the pool, so the two overlap.
 */
function streamedSink(entry: ZipEntry, track: Track): DigestSink {
  const hasher = contentHasher(entry, false);
  const frame = gzipFrame(entry);
  const inflater: Gunzip = createGunzip({ chunkSize: INFLATE_CHUNK_BYTES });
  inflater.write(frame.header);
  let hashError: unknown;
  let inflated = 0;
  inflater.on('data', (piece: Buffer) => {
    // An entry that inflates past its recorded size is damaged (or a bomb): stop rather than hash on.
    inflated += piece.length;
    if (inflated > entry.uncompressedSizeBytes) inflater.destroy(invalid(entry, `more than the ${entry.uncompressedSizeBytes} bytes recorded`));
    queueMicrotask(() => {
      try {
        hasher.update(piece);
      } catch (err) {
        hashError ??= err;
      }
    });
  });
  const finished = new Promise<FileDigests>((resolve, reject) => {
    inflater.on('error', (err) => reject(err instanceof IpaError ? err : invalid(entry, err.message)));
    inflater.on('end', () => {
      // The last pieces' microtasks run before this one.
      queueMicrotask(() => {
        if (hashError !== undefined) return reject(hashError);
        try {
          resolve(hasher.digest());
        } catch (err) {
          reject(err);
        }
      });
    });
  });
  track(entry, finished);
  return {
    push(chunk) {
      // zlib reads the chunk on the pool until the write's callback: only then may the caller
      // reuse it. Its pieces are hashed meanwhile, as they come back.
      return new Promise<void>((resolve) => {
        if (inflater.destroyed) return resolve();
        inflater.write(chunk, () => resolve());
      });
    },
    end() {
      inflater.end(frame.trailer);
    },
  };
}

function invalid(entry: ZipEntry, found: string): IpaError {
  return new IpaError('ZIP_INVALID', `Expected "${entry.name}" to inflate to the ${entry.uncompressedSizeBytes} bytes and CRC-32 its header records, found: ${found}.`);
}
