/**
 * A zip writer built for re-signing: entries copied from the source archive go out as their stored
 * compressed bytes, read in large sequential blocks, with a fresh local header; new entries are
 * deflated by zlib's native code at a fast level. Sizes and CRCs are known before each entry is
 * written, so there are no data descriptors. Zip64 records appear only when sizes or offsets need
 * them (APPNOTE 4.3.9, 4.4, 4.5.3). @zip.js/zip.js costs about a millisecond and a half per entry;
 * IPAs hold tens of thousands, so the copy path is done here.
 */
import { open, rename, rm, type FileHandle } from 'node:fs/promises';
import { constants as zlibConstants, crc32, deflateRaw, deflateRawSync } from 'node:zlib';
import { promisify } from 'node:util';
import { IpaError } from '../errors.js';
import type { ZipEntry } from './archive.js';

const deflateRawAsync = promisify(deflateRaw);
// BFINAL set, fixed Huffman, end of block: closes a stream of sync-flushed pieces.
const FINAL_EMPTY_BLOCK = deflateRawSync(Buffer.alloc(0));

const LOCAL_SIGNATURE = 0x04034b50;
const CENTRAL_SIGNATURE = 0x02014b50;
const END_SIGNATURE = 0x06054b50;
const ZIP64_END_SIGNATURE = 0x06064b50;
const ZIP64_LOCATOR_SIGNATURE = 0x07064b50;
const ZIP64_EXTRA_ID = 0x0001;
const MAX_32 = 0xffffffff;
const MAX_16 = 0xffff;
const FLAG_UTF8 = 0x0800;
// "made by" Unix (3) with spec 6.3, so external attributes carry st_mode
const MADE_BY_UNIX = (3 << 8) | 63;
const WRITE_BUFFER_BYTES = 1024 * 1024;
const READ_BLOCK_BYTES = 1024 * 1024;
const MAX_WRITES_IN_FLIGHT = 4;
const DEFLATES_IN_FLIGHT = 3;

export interface ZipWriterOptions {
  /** Deflate level for new entries; 1 is fast and keeps binaries close to their original size. */
  level?: number;
}

export interface NewEntryOptions {
  /** st_mode, e.g. 0o100755 for an executable. */
  unixMode?: number;
  /** Store instead of deflating (already-compressed content). */
  store?: boolean;
  modified?: Date;
}

export interface SignedZipWriter {
  /** Copies an entry of the source archive without inflating it. */
  copy(entry: ZipEntry): Promise<void>;
  add(name: string, content: Buffer, options?: NewEntryOptions): Promise<void>;
  /**
   * Adds an entry whose content `produce` hands to its sink chunk by chunk (a binary signed as it
   * streams): deflated chunk by chunk, its header completed once the CRC and sizes are known.
   */
  addStream(name: string, produce: (sink: (chunk: Buffer) => Promise<void>) => Promise<void>, options?: NewEntryOptions): Promise<void>;
  addDirectory(name: string, unixMode?: number): Promise<void>;
  /** Writes the central directory and moves the file into place. */
  close(): Promise<void>;
  /** Deletes the partial output. */
  abort(): Promise<void>;
}

interface CentralRecord {
  name: Buffer;
  flags: number;
  method: number;
  dosTime: number;
  dosDate: number;
  crc: number;
  compressedSize: number;
  uncompressedSize: number;
  externalAttributes: number;
  versionMadeBy: number;
  offset: number;
}

/**
 * Opens `output` for writing (through a temporary file beside it) with `source`, the archive the
 * copied entries come from.
 */
export async function createSignedZipWriter(source: string, output: string, options: ZipWriterOptions = {}): Promise<SignedZipWriter> {
  const temporary = `${output}.partial-${process.pid}-${Date.now()}`;
  const input = await open(source, 'r');
  const out = await open(temporary, 'w');
  const level = options.level ?? 1;
  const records: CentralRecord[] = [];
  const names = new Set<string>();
  let position = 0;
  // Buffers are reused, not left to the collector: on a 1 GB copy the garbage otherwise piles up
  // to tens of MB before V8 notices it (its heap barely grows).
  const spare: Buffer[] = [];
  const take = (): Buffer => spare.pop() ?? Buffer.allocUnsafe(WRITE_BUFFER_BYTES);
  let pending = take();
  let pendingLength = 0;
  const block = createBlockReader(input);
  // Writes go out at explicit offsets without waiting, a few at a time, so reading the next
  // block overlaps writing the last one.
  let flushedTo = 0;
  const inFlight = new Set<Promise<void>>();
  const writeAt = async (bytes: Buffer, release?: Buffer): Promise<void> => {
    const at = flushedTo;
    flushedTo += bytes.length;
    while (inFlight.size >= MAX_WRITES_IN_FLIGHT) await Promise.race(inFlight);
    const done = writeAll(out, bytes, at).finally(() => {
      inFlight.delete(done);
      if (release !== undefined && spare.length < MAX_WRITES_IN_FLIGHT + 1) spare.push(release);
    });
    inFlight.add(done);
  };
  const drain = async (): Promise<void> => {
    await Promise.all(inFlight);
  };

  const flush = async (): Promise<void> => {
    if (pendingLength === 0) return;
    const full = pending;
    pending = take();
    await writeAt(full.subarray(0, pendingLength), full);
    pendingLength = 0;
  };
  /** Copies into the pending buffer (so a caller's buffer, such as a read block, is free at once). */
  const write = async (bytes: Buffer): Promise<void> => {
    for (let at = 0; at < bytes.length; ) {
      if (pendingLength === WRITE_BUFFER_BYTES) await flush();
      const n = Math.min(bytes.length - at, WRITE_BUFFER_BYTES - pendingLength);
      bytes.copy(pending, pendingLength, at, at + n);
      pendingLength += n;
      at += n;
    }
    position += bytes.length;
  };
  const claim = (name: string): void => {
    if (names.has(name)) throw new IpaError('ZIP_DUPLICATE_NAME', `Expected each output entry once, found "${name}" twice.`);
    names.add(name);
  };
  const writeEntry = async (record: Omit<CentralRecord, 'offset'>, data: Buffer | ((sink: (chunk: Buffer) => Promise<void>) => Promise<void>)): Promise<void> => {
    const offset = position;
    await write(localHeader(record));
    if (Buffer.isBuffer(data)) await write(data);
    else await data(write);
    records.push({ ...record, offset });
  };

  return {
    async copy(entry) {
      claim(entry.name);
      const raw = entry.source;
      // The local header's own name and extra lengths locate the data (APPNOTE 4.3.7).
      const header = await block.read(raw.relativeOffsetOfLocalHeader, 30);
      if (header.readUInt32LE(0) !== LOCAL_SIGNATURE) {
        throw new IpaError('ZIP_INVALID', `Expected a local file header for "${entry.name}" at offset ${raw.relativeOffsetOfLocalHeader}, found 0x${header.readUInt32LE(0).toString(16)}.`);
      }
      const dataStart = raw.relativeOffsetOfLocalHeader + 30 + header.readUInt16LE(26) + header.readUInt16LE(28);
      await writeEntry(
        {
          name: Buffer.from(raw.fileNameRaw ?? Buffer.from(entry.name, 'utf8')),
          // Keep only the UTF-8 flag: sizes are known, so no data descriptor (bit 3).
          flags: raw.generalPurposeBitFlag & FLAG_UTF8,
          method: entry.compressionMethod,
          dosTime: raw.lastModFileTime,
          dosDate: raw.lastModFileDate,
          crc: entry.crc32,
          compressedSize: entry.compressedSizeBytes,
          uncompressedSize: entry.uncompressedSizeBytes,
          externalAttributes: raw.externalFileAttributes >>> 0,
          versionMadeBy: raw.versionMadeBy,
        },
        async (sink) => {
          for (const [at, length] of gridChunks(dataStart, dataStart + entry.compressedSizeBytes)) await sink(await block.read(at, length));
        },
      );
    },
    async add(name, content, entryOptions = {}) {
      claim(name);
      const compressed = entryOptions.store ? content : await deflateRawAsync(content, { level });
      // Keep the stored form when deflate does not pay (already-compressed data).
      const isStored = entryOptions.store === true || compressed.length >= content.length;
      const { time, date } = dosDateTime(entryOptions.modified ?? new Date());
      await writeEntry(
        {
          name: Buffer.from(name, 'utf8'),
          flags: FLAG_UTF8,
          method: isStored ? 0 : 8,
          dosTime: time,
          dosDate: date,
          crc: crc32(content) >>> 0,
          compressedSize: isStored ? content.length : compressed.length,
          uncompressedSize: content.length,
          externalAttributes: ((entryOptions.unixMode ?? 0o100644) << 16) >>> 0,
          versionMadeBy: MADE_BY_UNIX,
        },
        isStored ? content : compressed,
      );
    },
    async addStream(name, produce, entryOptions = {}) {
      claim(name);
      const { time, date } = dosDateTime(entryOptions.modified ?? new Date());
      const record: Omit<CentralRecord, 'offset'> = {
        name: Buffer.from(name, 'utf8'),
        flags: FLAG_UTF8,
        method: 8,
        dosTime: time,
        dosDate: date,
        crc: 0,
        compressedSize: 0,
        uncompressedSize: 0,
        externalAttributes: ((entryOptions.unixMode ?? 0o100644) << 16) >>> 0,
        versionMadeBy: MADE_BY_UNIX,
      };
      const offset = position;
      await write(localHeader(record));
      let crc = 0;
      let uncompressedSize = 0;
      let compressedSize = 0;
      // Each chunk deflates on its own and ends on a byte boundary (Z_SYNC_FLUSH), so the pieces
      // concatenate into one raw deflate stream; an empty final block closes it.
      // Pieces deflate on libuv's pool a few at a time, in parallel with the producer; they are
      // written in order.
      const queue: Promise<Buffer>[] = [];
      const writeNext = async (): Promise<void> => {
        const piece = await queue.shift()!;
        compressedSize += piece.length;
        await write(piece);
      };
      try {
        await produce(async (chunk) => {
          crc = crc32(chunk, crc);
          uncompressedSize += chunk.length;
          queue.push(deflateRawAsync(chunk, { level, finishFlush: zlibConstants.Z_SYNC_FLUSH }));
          if (queue.length >= DEFLATES_IN_FLIGHT) await writeNext();
        });
        while (queue.length > 0) await writeNext();
      } finally {
        // Settle what is left, so a failure leaves no unhandled rejection behind.
        await Promise.allSettled(queue);
      }
      const last = FINAL_EMPTY_BLOCK;
      compressedSize += last.length;
      await write(last);
      if (compressedSize >= MAX_32 || uncompressedSize >= MAX_32) {
        throw new IpaError('MACHO_TOO_LARGE', `Expected "${name}" to stay under 4 GiB, found ${uncompressedSize} bytes.`);
      }
      const complete = { ...record, crc: crc >>> 0, compressedSize, uncompressedSize };
      // The header went out with zero CRC and sizes; write the finished one over it.
      await flush();
      await drain();
      await writeAll(out, localHeader(complete), offset);
      records.push({ ...complete, offset });
    },
    async addDirectory(name, unixMode = 0o040755) {
      const dirName = name.endsWith('/') ? name : `${name}/`;
      claim(dirName);
      const { time, date } = dosDateTime(new Date());
      await writeEntry(
        {
          name: Buffer.from(dirName, 'utf8'),
          flags: FLAG_UTF8,
          method: 0,
          dosTime: time,
          dosDate: date,
          crc: 0,
          compressedSize: 0,
          uncompressedSize: 0,
          // st_mode in the upper half, MS-DOS directory bit (0x10) in the lower
          externalAttributes: ((unixMode << 16) | 0x10) >>> 0,
          versionMadeBy: MADE_BY_UNIX,
        },
        Buffer.alloc(0),
      );
    },
    async close() {
      const centralStart = position;
      for (const record of records) await write(centralHeader(record));
      await write(endRecords(records.length, centralStart, position - centralStart));
      await flush();
      await drain();
      await out.close();
      await input.close();
      await rename(temporary, output);
    },
    async abort() {
      await drain().catch(() => undefined);
      await out.close().catch(() => undefined);
      await input.close().catch(() => undefined);
      await rm(temporary, { force: true });
    },
  };
}

/**
 * Reads ranges of the source through 4 MiB blocks on a fixed grid, since copied entries are mostly
 * in order; the next block is read ahead while the current one is used.
 */
function createBlockReader(handle: FileHandle): { read(offset: number, length: number): Promise<Buffer> } {
  const blocks = new Map<number, Promise<Buffer>>();
  // A returned range is used before the next read, so a block's buffer is free once it is evicted.
  const spare: Buffer[] = [];
  const blockAt = (index: number): Promise<Buffer> => {
    let data = blocks.get(index);
    if (data === undefined) {
      data = readUpTo(handle, index * READ_BLOCK_BYTES, READ_BLOCK_BYTES, spare.pop());
      data.catch(() => undefined); // a read-ahead nobody uses must not become an unhandled rejection
      blocks.set(index, data);
    }
    return data;
  };
  const use = async (index: number): Promise<Buffer> => {
    const data = await blockAt(index);
    // Keep this block and the one read ahead; forget the rest.
    for (const [key, old] of blocks) {
      if (key >= index) continue;
      blocks.delete(key);
      void old.then((buffer) => {
        if (buffer.buffer.byteLength === READ_BLOCK_BYTES && spare.length < 2) spare.push(Buffer.from(buffer.buffer, buffer.byteOffset, READ_BLOCK_BYTES));
      }, () => undefined);
    }
    if (data.length === READ_BLOCK_BYTES) void blockAt(index + 1);
    return data;
  };
  return {
    async read(offset, length) {
      const first = Math.floor(offset / READ_BLOCK_BYTES);
      const last = Math.floor((offset + length - 1) / READ_BLOCK_BYTES);
      if (length === 0) return Buffer.alloc(0);
      if (last - first > 1) return readExactly(handle, offset, length);
      const parts: Buffer[] = [];
      for (let index = first; index <= last; index++) {
        const data = await use(index);
        const from = Math.max(offset, index * READ_BLOCK_BYTES) - index * READ_BLOCK_BYTES;
        const to = Math.min(offset + length, (index + 1) * READ_BLOCK_BYTES) - index * READ_BLOCK_BYTES;
        if (data.length < to) {
          throw new IpaError('ZIP_TRUNCATED', `Expected ${length} bytes at offset ${offset} of the source archive, found the file ends first.`);
        }
        parts.push(data.subarray(from, to));
      }
      return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
    },
  };
}

/** Splits [start, end) at the block grid, so each piece is served from one block without copying. */
function* gridChunks(start: number, end: number): Generator<[number, number]> {
  for (let at = start; at < end; ) {
    const next = Math.min(end, (Math.floor(at / READ_BLOCK_BYTES) + 1) * READ_BLOCK_BYTES);
    yield [at, next - at];
    at = next;
  }
}

async function readUpTo(handle: FileHandle, offset: number, length: number, into?: Buffer): Promise<Buffer> {
  const buffer = into !== undefined && into.length >= length ? into : Buffer.allocUnsafe(length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await handle.read(buffer, done, length - done, offset + done);
    if (bytesRead === 0) break;
    done += bytesRead;
  }
  return buffer.subarray(0, done);
}

async function readExactly(handle: FileHandle, offset: number, length: number): Promise<Buffer> {
  const bytes = await readUpTo(handle, offset, length);
  if (bytes.length < length) throw new IpaError('ZIP_TRUNCATED', `Expected ${length} bytes at offset ${offset} of the source archive, found ${bytes.length}.`);
  return bytes;
}

async function writeAll(handle: FileHandle, bytes: Buffer, position: number): Promise<void> {
  let done = 0;
  while (done < bytes.length) done += (await handle.write(bytes, done, bytes.length - done, position + done)).bytesWritten;
}

function dosDateTime(date: Date): { time: number; date: number } {
  const year = Math.max(1980, date.getFullYear());
  return {
    time: (date.getHours() << 11) | (date.getMinutes() << 5) | Math.floor(date.getSeconds() / 2),
    date: ((year - 1980) << 9) | ((date.getMonth() + 1) << 5) | date.getDate(),
  };
}

/** Local file header (APPNOTE 4.3.7); sizes over 4 GiB go in a zip64 extra field. */
function localHeader(r: Omit<CentralRecord, 'offset'>): Buffer {
  const needs64 = r.compressedSize >= MAX_32 || r.uncompressedSize >= MAX_32;
  const extra = needs64 ? zip64Extra([r.uncompressedSize, r.compressedSize]) : Buffer.alloc(0);
  const header = Buffer.alloc(30);
  header.writeUInt32LE(LOCAL_SIGNATURE, 0);
  header.writeUInt16LE(needs64 ? 45 : 20, 4); // version needed to extract
  header.writeUInt16LE(r.flags, 6);
  header.writeUInt16LE(r.method, 8);
  header.writeUInt16LE(r.dosTime, 10);
  header.writeUInt16LE(r.dosDate, 12);
  header.writeUInt32LE(r.crc, 14);
  header.writeUInt32LE(needs64 ? MAX_32 : r.compressedSize, 18);
  header.writeUInt32LE(needs64 ? MAX_32 : r.uncompressedSize, 22);
  header.writeUInt16LE(r.name.length, 26);
  header.writeUInt16LE(extra.length, 28);
  return Buffer.concat([header, r.name, extra]);
}

/** Central directory header (APPNOTE 4.3.12); fields that overflow move to the zip64 extra field. */
function centralHeader(r: CentralRecord): Buffer {
  const big: number[] = [];
  if (r.uncompressedSize >= MAX_32) big.push(r.uncompressedSize);
  if (r.compressedSize >= MAX_32) big.push(r.compressedSize);
  if (r.offset >= MAX_32) big.push(r.offset);
  const extra = big.length > 0 ? zip64Extra(big) : Buffer.alloc(0);
  const header = Buffer.alloc(46);
  header.writeUInt32LE(CENTRAL_SIGNATURE, 0);
  header.writeUInt16LE(r.versionMadeBy, 4);
  header.writeUInt16LE(big.length > 0 ? 45 : 20, 6);
  header.writeUInt16LE(r.flags, 8);
  header.writeUInt16LE(r.method, 10);
  header.writeUInt16LE(r.dosTime, 12);
  header.writeUInt16LE(r.dosDate, 14);
  header.writeUInt32LE(r.crc, 16);
  header.writeUInt32LE(r.compressedSize >= MAX_32 ? MAX_32 : r.compressedSize, 20);
  header.writeUInt32LE(r.uncompressedSize >= MAX_32 ? MAX_32 : r.uncompressedSize, 24);
  header.writeUInt16LE(r.name.length, 28);
  header.writeUInt16LE(extra.length, 30);
  header.writeUInt16LE(0, 32); // comment length
  header.writeUInt16LE(0, 34); // disk number start
  header.writeUInt16LE(0, 36); // internal attributes
  header.writeUInt32LE(r.externalAttributes, 38);
  header.writeUInt32LE(r.offset >= MAX_32 ? MAX_32 : r.offset, 42);
  return Buffer.concat([header, r.name, extra]);
}

function zip64Extra(values: number[]): Buffer {
  const extra = Buffer.alloc(4 + values.length * 8);
  extra.writeUInt16LE(ZIP64_EXTRA_ID, 0);
  extra.writeUInt16LE(values.length * 8, 2);
  values.forEach((value, i) => extra.writeBigUInt64LE(BigInt(value), 4 + i * 8));
  return extra;
}

/** End of central directory, preceded by the zip64 end record and locator when any field overflows. */
function endRecords(count: number, centralStart: number, centralSize: number): Buffer {
  const needs64 = count >= MAX_16 || centralStart >= MAX_32 || centralSize >= MAX_32;
  const parts: Buffer[] = [];
  if (needs64) {
    const zip64End = Buffer.alloc(56);
    zip64End.writeUInt32LE(ZIP64_END_SIGNATURE, 0);
    zip64End.writeBigUInt64LE(44n, 4); // size of the rest of this record
    zip64End.writeUInt16LE(MADE_BY_UNIX, 12);
    zip64End.writeUInt16LE(45, 14);
    zip64End.writeUInt32LE(0, 16); // this disk
    zip64End.writeUInt32LE(0, 20); // disk with the central directory
    zip64End.writeBigUInt64LE(BigInt(count), 24);
    zip64End.writeBigUInt64LE(BigInt(count), 32);
    zip64End.writeBigUInt64LE(BigInt(centralSize), 40);
    zip64End.writeBigUInt64LE(BigInt(centralStart), 48);
    const locator = Buffer.alloc(20);
    locator.writeUInt32LE(ZIP64_LOCATOR_SIGNATURE, 0);
    locator.writeUInt32LE(0, 4);
    locator.writeBigUInt64LE(BigInt(centralStart + centralSize), 8); // offset of the zip64 end record
    locator.writeUInt32LE(1, 16); // total disks
    parts.push(zip64End, locator);
  }
  const end = Buffer.alloc(22);
  end.writeUInt32LE(END_SIGNATURE, 0);
  end.writeUInt16LE(Math.min(count, MAX_16), 8);
  end.writeUInt16LE(Math.min(count, MAX_16), 10);
  end.writeUInt32LE(Math.min(centralSize, MAX_32), 12);
  end.writeUInt32LE(Math.min(centralStart, MAX_32), 16);
  parts.push(end);
  return Buffer.concat(parts);
}
