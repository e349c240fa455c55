/**
 * A zip writer built for re-signing: entries copied from the source archive go out as their stored
 * compressed bytes, read in large sequential blocks, with a fresh local header; new entries are
 * deflated by zlib's native code at a fast level. Sizes and CRCs are known before each entry is
 * written, so there are no data descriptors. Zip64 records appear only when sizes or offsets need
 * them (APPNOTE 4.3.9, 4.4, 4.5.3). @zip.js/zip.js costs about a millisecond and a half per entry;
 * IPAs hold tens of thousands, so the copy path is done here.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { constants as zlibConstants, crc32, createDeflateRaw, deflateRaw, deflateRawSync } from 'node:zlib';
import { promisify } from 'node:util';
import { IpaError } from '../errors.js';
import { centralFieldsOf, type ZipEntry } from './archive.js';
import { blockChunks, createBlockWindow, type HeldBytes } from './block-reader.js';
import { crc32Combine } from './crc32-combine.js';
import {
  dropPrefixCopy,
  openOutputFile,
  partialPathFor,
  type PositionalWriter,
  type StartedCopy,
} from './output-file.js';
import { collectYoung, discard } from './discard.js';
import {
  FLAG_UTF8,
  LOCAL_SIGNATURE,
  MADE_BY_UNIX,
  MAX_32,
  centralDirectory,
  dosDateTime,
  endRecords,
  localHeader,
  localHeaderLength,
  type CentralRecord,
} from './records.js';

const deflateRawAsync = promisify(deflateRaw);
// BFINAL set, fixed Huffman, end of block: closes a stream of sync-flushed pieces.
const FINAL_EMPTY_BLOCK = deflateRawSync(Buffer.alloc(0));

const WRITE_BUFFER_BYTES = 1024 * 1024;
const MAX_WRITES_IN_FLIGHT = 2;
// Copies read the source through a few blocks this large and write from them in place: one read
// and one write per block, and no second copy in memory. Each call through libuv's pool wakes a
// thread, which costs more in a virtual machine than copying a MiB.
const COPY_BLOCK_BYTES = 2 * 1024 * 1024;
// One block read ahead, one in use, one being written: a fourth copied no faster at 1 GB and
// raised the peak RSS by some 10 MB (more buffers freed and reused across the malloc arenas).
const COPY_BLOCKS = 3;
// The kernel takes at most 1024 pieces per call (IOV_MAX); libuv splits larger writes.
const MAX_PIECES_PER_WRITE = 1024;
const DEFLATES_IN_FLIGHT = 3;
/** The level new entries deflate at unless the writer is told otherwise. */
export const DEFAULT_DEFLATE_LEVEL = 1;

export interface ZipWriterOptions {
  /** Deflate level for new entries; 1 is fast and keeps binaries close to their original size. */
  level?: number;
  /** Refuse (SIGNED_IPA_TOO_LARGE) to write past this many bytes, before writing them. */
  maxBytes?: number;
  /** The time new entries carry (now by default): a sign with a fixed clock writes the same bytes. */
  modified?: Date;
  /**
   * Starts the output as a copy of `template`, which holds exactly what copying `entries` (in
   * order) writes: copied in the kernel, without reading it here (see sign-ipa/copy-template.ts).
   * `started`: that copy, begun before the writer (startPrefixCopy); the writer takes it over.
   */
  prefix?: { template: string; entries: readonly ZipEntry[]; started?: StartedCopy };
}

/**
 * Deflated bytes kept from an earlier write of the same content (sign-ipa/code-cache.ts): raw
 * deflate that ends on a byte boundary (sync-flushed pieces), so it joins the pieces around it.
 */
export interface DeflatedRun {
  readonly file: FileHandle;
  readonly offset: number;
  readonly compressedBytes: number;
  readonly uncompressedBytes: number;
  /** CRC-32 of the uncompressed bytes. */
  readonly crc: number;
}

export interface StreamEntryOptions extends NewEntryOptions {
  /** Sees each chunk's deflated parts, in order, before they are freed (the chunk's index, from 0). */
  onDeflated?: (index: number, parts: readonly Buffer[]) => Promise<void>;
}

export interface NewEntryOptions {
  /** st_mode, e.g. 0o100755 for an executable. */
  unixMode?: number;
  /** Store instead of deflating (already-compressed content). */
  store?: boolean;
  modified?: Date;
}

/** Writes entries into one stretch of the output. */
export interface ZipEntryWriter {
  /** Copies an entry of the source archive without inflating it (see copyAll). */
  copy(entry: ZipEntry): Promise<void>;
  /**
   * Copies entries of the source archive (directories too) in order, without inflating them:
   * their stored bytes are written straight from the blocks read, several entries per write.
   * Stops, with the signal's reason, once `signal` is aborted.
   */
  copyAll(entries: Iterable<ZipEntry>, signal?: AbortSignal): Promise<void>;
  add(name: string, content: Buffer, options?: NewEntryOptions): Promise<void>;
  /**
   * Adds an entry whose content `produce` hands to its sink chunk by chunk (a binary signed as it
   * streams): deflated chunk by chunk, its header completed once the CRC and sizes are known. A
   * chunk is free for the producer to reuse once the sink's promise resolves.
   */
  addStream(
    name: string,
    produce: (
      sink: (chunk: Buffer) => Promise<void>,
      copyDeflated: (run: DeflatedRun) => Promise<void>,
    ) => Promise<void>,
    options?: StreamEntryOptions,
  ): Promise<void>;
  addDirectory(name: string, unixMode?: number): Promise<void>;
}

export interface SignedZipWriter extends ZipEntryWriter {
  /** The bytes `copy(entry)` (or, for a directory, `addDirectory`) writes for an entry of the source. */
  copiedSize(entry: ZipEntry): number;
  /**
   * A writer for the entries that follow the first `start` bytes of the output, usable while this
   * one is still writing them: so signed code can be written while unchanged entries are copied.
   * This writer must end exactly at `start`; its entries come first in the central directory.
   */
  from(start: number): ZipEntryWriter;
  /** Writes the central directory and moves the file into place. */
  close(): Promise<void>;
  /** Deletes the partial output. */
  abort(): Promise<void>;
}

/** One stretch of the output: its own write buffer, position and central records. */
interface Region extends ZipEntryWriter {
  readonly start: number;
  readonly records: CentralRecord[];
  position(): number;
  write(bytes: Buffer): Promise<void>;
  /** Sends what is buffered and waits for every write of this region. */
  settle(): Promise<void>;
  /** Takes `entries` as already written at the start of this region, as copyAll would write them. */
  adopt(entries: readonly ZipEntry[]): void;
}

/**
 * Opens `output` for writing (through a temporary file beside it) with `source`, the archive the
 * copied entries come from.
 */
export async function createSignedZipWriter(
  source: string,
  output: string,
  options: ZipWriterOptions = {},
): Promise<SignedZipWriter> {
  const { prefix } = options;
  const started = prefix?.started;
  if (started !== undefined && started.template !== prefix!.template) {
    await dropPrefixCopy(started);
    throw new Error(`zip writer: a copy of ${started.template} started for ${prefix!.template}`);
  }
  const temporary = started?.temporary ?? partialPathFor(output);
  const input = await open(source, 'r').catch(async (err: unknown) => {
    if (started !== undefined) await dropPrefixCopy(started);
    throw err;
  });
  const out = await openOutputFile(
    temporary,
    prefix === undefined
      ? undefined
      : {
          template: prefix.template,
          bytes: prefix.entries.reduce((sum, entry) => sum + copiedSize(entry), 0),
          ...(started === undefined ? {} : { copying: started.copying }),
        },
  ).catch(async (err: unknown) => {
    await input.close();
    throw err;
  });
  const level = options.level ?? DEFAULT_DEFLATE_LEVEL;
  const limit = options.maxBytes ?? Number.MAX_SAFE_INTEGER;
  const names = new Set<string>();
  const claim = (name: string): void => {
    if (names.has(name))
      throw new IpaError('ZIP_DUPLICATE_NAME', `Expected each output entry once, found "${name}" twice.`);
    names.add(name);
  };
  const context = { out, input, level, claim, limit, modified: options.modified };
  const regions = [createRegion(context, 0)];
  if (prefix !== undefined) regions[0]!.adopt(prefix.entries);

  return {
    copy: (entry) => regions[0]!.copy(entry),
    copyAll: (entries, signal) => regions[0]!.copyAll(entries, signal),
    add: (name, content, entryOptions) => regions[0]!.add(name, content, entryOptions),
    addStream: (name, produce, entryOptions) => regions[0]!.addStream(name, produce, entryOptions),
    addDirectory: (name, unixMode) => regions[0]!.addDirectory(name, unixMode),
    copiedSize,
    from(start) {
      // Everything before `start` is the first writer's to write: refuse now rather than after it.
      if (start > limit) throw tooLarge(limit, start);
      const region = createRegion(context, start);
      regions.push(region);
      return region;
    },
    async close() {
      await Promise.all(regions.map((region) => region.settle()));
      for (let i = 1; i < regions.length; i++) {
        if (regions[i - 1]!.position() !== regions[i]!.start) {
          throw new Error(
            `zip writer: a stretch ends at ${regions[i - 1]!.position()}, expected ${regions[i]!.start}`,
          );
        }
      }
      const last = regions.at(-1)!;
      const records = regions.flatMap((region) => region.records);
      const centralStart = last.position();
      await last.write(centralDirectory(records));
      await last.write(endRecords(records.length, centralStart, last.position() - centralStart));
      await last.settle();
      await input.close();
      await out.finish(output);
    },
    async abort() {
      await Promise.all(regions.map((region) => region.settle().catch(() => undefined)));
      await input.close().catch(() => undefined);
      await out.discard();
    },
  };
}

/** The bytes `copy(entry)` (or, for a directory, `addDirectory`) writes for an entry of the source. */
export function copiedSize(entry: ZipEntry): number {
  // What copyRecord and copiedDirectoryRecord would give, without making them.
  if (entry.isDirectory)
    return 30 + Buffer.byteLength(entry.name.endsWith('/') ? entry.name : `${entry.name}/`, 'utf8');
  const name = centralFieldsOf(entry).fileNameRaw;
  return (
    localHeaderLength({
      name: { length: name?.length ?? Buffer.byteLength(entry.name, 'utf8') },
      compressedSize: entry.compressedSizeBytes,
      uncompressedSize: entry.uncompressedSizeBytes,
    }) + entry.compressedSizeBytes
  );
}

/** The central record of an entry copied from the source: its own name bytes, times and attributes. */
function copyRecord(entry: ZipEntry): Omit<CentralRecord, 'offset'> {
  const raw = centralFieldsOf(entry);
  return {
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
  };
}

/** A directory of the source, with its own time: the same source writes the same bytes. */
function copiedDirectoryRecord(entry: ZipEntry): Omit<CentralRecord, 'offset'> {
  const raw = centralFieldsOf(entry);
  return {
    ...directoryRecord(entry.name, entry.unixMode ?? 0o040755),
    dosTime: raw.lastModFileTime,
    dosDate: raw.lastModFileDate,
  };
}

function directoryRecord(
  name: string,
  unixMode: number,
  modified = new Date(),
): Omit<CentralRecord, 'offset'> {
  const dirName = name.endsWith('/') ? name : `${name}/`;
  const { time, date } = dosDateTime(modified);
  return {
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
  };
}

/**
 * The central record of an entry written at `offset`. An object literal with every field: V8 gives
 * each `{ ...record, offset }` a hidden class of its own, some 400 bytes per entry.
 */
const at = (r: Omit<CentralRecord, 'offset'>, offset: number): CentralRecord => ({
  name: r.name,
  flags: r.flags,
  method: r.method,
  dosTime: r.dosTime,
  dosDate: r.dosDate,
  crc: r.crc,
  compressedSize: r.compressedSize,
  uncompressedSize: r.uncompressedSize,
  externalAttributes: r.externalAttributes,
  versionMadeBy: r.versionMadeBy,
  offset,
});

interface RegionContext {
  /** The output may not pass this many bytes. */
  limit: number;
  /** The time new entries carry, unless they say otherwise. */
  modified: Date | undefined;
  out: PositionalWriter;
  /** The source archive. */
  input: FileHandle;
  level: number;
  claim: (name: string) => void;
}

function tooLarge(limit: number, reaching: number): IpaError {
  return new IpaError(
    'SIGNED_IPA_TOO_LARGE',
    `Expected the signed IPA to stay within ${limit} bytes (its input's size and what signing adds), found it reaching ${reaching} bytes.`,
  );
}

function createRegion({ out, input, level, claim, limit, modified }: RegionContext, start: number): Region {
  const records: CentralRecord[] = [];
  let position = start;
  // Buffers are reused, not left to the collector: on a 1 GB copy the garbage otherwise piles up
  // to tens of MB before V8 notices it (its heap barely grows).
  const spare: Buffer[] = [];
  const take = (): Buffer => spare.pop() ?? Buffer.allocUnsafe(WRITE_BUFFER_BYTES);
  let pending: Buffer | undefined;
  let pendingLength = 0;
  // Writes go out at explicit offsets without waiting, a few at a time, so reading the next
  // block overlaps writing the last one.
  let flushedTo = start;
  const inFlight = new Set<Promise<void>>();
  /** Writes `bytes` (one buffer, or several written as one) next; `done` runs once they are written. */
  const writeAt = async (bytes: Buffer | readonly Buffer[], done?: () => void): Promise<void> => {
    const length = Buffer.isBuffer(bytes)
      ? bytes.length
      : bytes.reduce((sum, piece) => sum + piece.length, 0);
    const at = flushedTo;
    flushedTo += length;
    while (inFlight.size >= MAX_WRITES_IN_FLIGHT) await Promise.race(inFlight);
    const written = (Buffer.isBuffer(bytes) ? writeAll(out, bytes, at) : writevAll(out, bytes, at)).finally(
      () => {
        inFlight.delete(written);
        done?.();
      },
    );
    // A failure surfaces from the next wait for a write (or settle); not before it is awaited.
    written.catch(() => undefined);
    inFlight.add(written);
  };
  const drain = async (): Promise<void> => {
    await Promise.all(inFlight);
  };

  const flush = async (): Promise<void> => {
    if (pendingLength === 0 || pending === undefined) return;
    const full = pending;
    pending = undefined;
    const length = pendingLength;
    pendingLength = 0;
    await writeAt(full.subarray(0, length), () => {
      if (spare.length < MAX_WRITES_IN_FLIGHT + 1) spare.push(full);
    });
  };
  /** Copies into the pending buffer (so a caller's buffer, such as a read block, is free at once). */
  const write = async (bytes: Buffer): Promise<void> => {
    if (position + bytes.length > limit) throw tooLarge(limit, position + bytes.length);
    for (let at = 0; at < bytes.length;) {
      if (pendingLength === WRITE_BUFFER_BYTES) await flush();
      pending ??= take();
      const n = Math.min(bytes.length - at, WRITE_BUFFER_BYTES - pendingLength);
      bytes.copy(pending, pendingLength, at, at + n);
      pendingLength += n;
      at += n;
    }
    position += bytes.length;
  };
  /** Writes a range of another file next (output-file.ts: behind a kept stretch, copied when joined). */
  const writeFrom = async (source: FileHandle, offset: number, length: number): Promise<void> => {
    if (position + length > limit) throw tooLarge(limit, position + length);
    // What is buffered goes first: the range follows it.
    await flush();
    const at = flushedTo;
    flushedTo += length;
    position += length;
    await out.writeFrom(source, offset, length, at);
  };
  const writeEntry = async (
    record: Omit<CentralRecord, 'offset'>,
    data: Buffer | ((sink: (chunk: Buffer) => Promise<void>) => Promise<void>),
  ): Promise<void> => {
    const offset = position;
    await write(localHeader(record));
    if (Buffer.isBuffer(data)) await write(data);
    else await data(write);
    records.push(at(record, offset));
  };

  return {
    start,
    records,
    position: () => position,
    write,
    async settle() {
      await flush();
      await drain();
    },
    copy(entry) {
      return this.copyAll([entry]);
    },
    async copyAll(entries, signal) {
      // What is buffered goes first: from here on, pieces are written where `position` says.
      await flush();
      const window = createBlockWindow(input, COPY_BLOCK_BYTES, COPY_BLOCKS);
      // The next write: headers and held ranges of the source, in output order.
      let pieces: Buffer[] = [];
      let held: HeldBytes[] = [];
      const send = async (): Promise<void> => {
        if (pieces.length === 0) return;
        const releases = held;
        const batch = pieces;
        pieces = [];
        held = [];
        await writeAt(batch, () => {
          for (const range of releases) range.release();
        });
      };
      let block = -1;
      /** A range inside one block; the write so far goes out before the window moves on. */
      const hold = async (offset: number, length: number): Promise<HeldBytes> => {
        const index = Math.floor(offset / COPY_BLOCK_BYTES);
        if (index !== block || pieces.length >= MAX_PIECES_PER_WRITE) await send();
        block = index;
        return window.hold(offset, length);
      };
      try {
        for (const entry of entries) {
          signal?.throwIfAborted();
          if (entry.isDirectory) {
            const record = copiedDirectoryRecord(entry);
            claim(record.name.toString('utf8'));
            const header = localHeader(record);
            records.push(at(record, position));
            pieces.push(header);
            position += header.length;
            continue;
          }
          claim(entry.name);
          const offset = centralFieldsOf(entry).relativeOffsetOfLocalHeader;
          // The local header's own name and extra lengths locate the data (APPNOTE 4.3.7).
          const local = Buffer.alloc(30);
          for (const [from, length] of blockChunks(offset, offset + 30, COPY_BLOCK_BYTES)) {
            const range = await hold(from, length);
            range.bytes.copy(local, from - offset);
            range.release();
          }
          if (local.readUInt32LE(0) !== LOCAL_SIGNATURE) {
            throw new IpaError(
              'ZIP_INVALID',
              `Expected a local file header for "${entry.name}" at offset ${offset}, found 0x${local.readUInt32LE(0).toString(16)}.`,
            );
          }
          const dataStart = offset + 30 + local.readUInt16LE(26) + local.readUInt16LE(28);
          const record = copyRecord(entry);
          const header = localHeader(record);
          if (position + header.length + entry.compressedSizeBytes > limit)
            throw tooLarge(limit, position + header.length + entry.compressedSizeBytes);
          records.push(at(record, position));
          pieces.push(header);
          position += header.length;
          for (const [from, length] of blockChunks(
            dataStart,
            dataStart + entry.compressedSizeBytes,
            COPY_BLOCK_BYTES,
          )) {
            const range = await hold(from, length);
            pieces.push(range.bytes);
            held.push(range);
            position += length;
          }
        }
        await send();
        // Every block is free once its writes are done: closing the window then lets them all go.
        await drain();
      } finally {
        for (const range of held) range.release();
        window.close();
      }
      collectYoung();
    },
    async add(name, content, entryOptions = {}) {
      claim(name);
      const compressed = entryOptions.store ? content : await deflateRawAsync(content, { level });
      // Keep the stored form when deflate does not pay (already-compressed data).
      const isStored = entryOptions.store === true || compressed.length >= content.length;
      const { time, date } = dosDateTime(entryOptions.modified ?? modified ?? new Date());
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
      const { time, date } = dosDateTime(entryOptions.modified ?? modified ?? new Date());
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
      // The producer may reuse its chunk once the sink resolves, so each piece is deflated from
      // a copy in one of a few buffers kept for this entry: fresh multi-MiB buffers per chunk
      // would leave the collector and malloc tens of MB behind.
      const queue: Promise<Buffer[]>[] = [];
      const copies: Buffer[] = [];
      let written = 0;
      const writeNext = async (): Promise<void> => {
        const parts = await queue.shift()!;
        await entryOptions.onDeflated?.(written++, parts);
        for (const part of parts) {
          compressedSize += part.length;
          await write(part);
        }
        // write() copied them; they share zlib's output buffer, which nothing else holds.
        if (parts[0] !== undefined) discard(parts[0]);
      };
      const copyDeflated = async (run: DeflatedRun): Promise<void> => {
        while (queue.length > 0) await writeNext();
        crc = crc32Combine(crc, run.crc, run.uncompressedBytes);
        uncompressedSize += run.uncompressedBytes;
        compressedSize += run.compressedBytes;
        written++;
        await writeFrom(run.file, run.offset, run.compressedBytes);
      };
      try {
        await produce(async (chunk) => {
          crc = crc32(chunk, crc);
          uncompressedSize += chunk.length;
          let copy = copies.pop();
          if (copy === undefined || copy.length < chunk.length)
            copy = Buffer.allocUnsafe(Math.max(chunk.length, copy?.length ?? 0));
          chunk.copy(copy);
          const held = copy;
          const piece = held.subarray(0, chunk.length);
          queue.push(
            deflateChunk(piece, level).finally(() => {
              if (copies.length < DEFLATES_IN_FLIGHT) copies.push(held);
            }),
          );
          if (queue.length >= DEFLATES_IN_FLIGHT) await writeNext();
        }, copyDeflated);
        while (queue.length > 0) await writeNext();
      } finally {
        // Settle what is left, so a failure leaves no unhandled rejection behind.
        await Promise.allSettled(queue);
      }
      const last = FINAL_EMPTY_BLOCK;
      compressedSize += last.length;
      await write(last);
      if (compressedSize >= MAX_32 || uncompressedSize >= MAX_32) {
        throw new IpaError(
          'MACHO_TOO_LARGE',
          `Expected "${name}" to stay under 4 GiB, found ${uncompressedSize} bytes.`,
        );
      }
      const complete = { ...record, crc: crc >>> 0, compressedSize, uncompressedSize };
      // The header went out with zero CRC and sizes; write the finished one over it.
      await flush();
      await drain();
      await writeAll(out, localHeader(complete), offset);
      records.push(at(complete, offset));
    },
    adopt(entries) {
      // The template holds these entries' local headers and data: only their records are made.
      for (const entry of entries) {
        const record = entry.isDirectory ? copiedDirectoryRecord(entry) : copyRecord(entry);
        claim(entry.isDirectory ? record.name.toString('utf8') : entry.name);
        records.push(at(record, position));
        position += copiedSize(entry);
      }
      flushedTo = position;
    },
    async addDirectory(name, unixMode = 0o040755) {
      const record = directoryRecord(name, unixMode, modified);
      claim(record.name.toString('utf8'));
      await writeEntry(record, Buffer.alloc(0));
    },
  };
}

/**
 * One chunk of a streamed entry as addStream deflates it: at `level`, or stored when deflate would
 * not shrink it. Code prepared ahead of its entry (sign-ipa/code-cache.ts) deflates through this
 * too, so its bytes are the ones addStream would write.
 */
export function deflateChunk(piece: Buffer, level: number): Promise<Buffer[]> {
  return deflatePiece(piece, deflatesWell(piece, level) ? level : 0);
}

/**
 * A piece deflated on libuv's pool as one raw stream ending in a sync flush, answered as the parts
 * zlib wrote: the bytes deflateRaw answers, without its joined copy of them. chunkSize leaves room
 * for the whole output in one buffer, so the parts share it and zlib sees the calls deflateRaw
 * makes.
 */
function deflatePiece(piece: Buffer, level: number): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    const engine = createDeflateRaw({
      level,
      finishFlush: zlibConstants.Z_SYNC_FLUSH,
      chunkSize: piece.length + 4096,
    });
    const parts: Buffer[] = [];
    engine.on('data', (part: Buffer) => parts.push(part));
    engine.on('error', reject);
    engine.on('end', () => resolve(parts));
    engine.end(piece);
  });
}

const SAMPLE_BYTES = 8 * 1024;

/**
 * Whether deflating a piece pays, judged from three samples (its start, middle and end): one
 * that does not is written as stored blocks (level 0), since deflate spends as long failing to
 * shrink random bytes (encrypted or already-compressed sections) as it does shrinking code.
 */
export function deflatesWell(piece: Buffer, level: number): boolean {
  if (level === 0) return false;
  if (piece.length < SAMPLE_BYTES * 4) return true;
  let sampled = 0;
  for (const at of [0, (piece.length - SAMPLE_BYTES) >> 1, piece.length - SAMPLE_BYTES]) {
    sampled += deflateRawSync(piece.subarray(at, at + SAMPLE_BYTES), { level }).length;
  }
  return sampled < 3 * SAMPLE_BYTES * 0.95;
}

/** Writes several buffers as one, with one call unless the kernel takes less than all of them. */
async function writevAll(
  handle: PositionalWriter,
  buffers: readonly Buffer[],
  position: number,
): Promise<void> {
  let skip = (await handle.writev(buffers as Buffer[], position)).bytesWritten;
  let at = position + skip;
  for (const buffer of buffers) {
    if (skip >= buffer.length) {
      skip -= buffer.length;
      continue;
    }
    const rest = buffer.subarray(skip);
    skip = 0;
    await writeAll(handle, rest, at);
    at += rest.length;
  }
}

async function writeAll(handle: PositionalWriter, bytes: Buffer, position: number): Promise<void> {
  let done = 0;
  while (done < bytes.length)
    done += (await handle.write(bytes, done, bytes.length - done, position + done)).bytesWritten;
}
