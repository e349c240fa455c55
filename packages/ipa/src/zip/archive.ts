import { open as openFile, stat, type FileHandle } from 'node:fs/promises';
import { PassThrough, Transform, type Readable } from 'node:stream';
import { constants as zlibConstants, crc32, inflateRawSync } from 'node:zlib';
import yauzl from 'yauzl';
import { IpaError } from '../errors.js';
import { toZipError } from './errors.js';
import { openFileReader } from './file-reader.js';
import {
  createWindow,
  FLAG_ENCRYPTED,
  verifyLayout,
  type CentralEntry as CentralEntryFields,
  type ReadRange,
} from './layout.js';
import type { CentralFields, ZipEntry } from './entry.js';
import { readEntryTable, tableKey, writeEntryTable, type EntryTable } from './entry-table.js';
import { resolveZipLimits, type ZipLimits } from './limits.js';
import {
  assertSafeEntryName,
  enclosingAppDir,
  isInside,
  normalizeEntryKey,
  resolveSymlink,
} from './names.js';

export type { CentralFields, ZipEntry } from './entry.js';

interface KeptEntry extends ZipEntry {
  readonly central: CentralFields;
  /** Where the entry's stored bytes start, once its local header has been checked (layout.ts). */
  readonly dataStart: number;
}

const EMPTY = Buffer.alloc(0);

// Entries share this prototype: `source` is built when asked for, not kept.
const entryPrototype = {
  get source(): yauzl.Entry {
    return toYauzlEntry(this as unknown as KeptEntry);
  },
};

function toYauzlEntry(entry: KeptEntry): yauzl.Entry {
  const central = entry.central;
  const fileNameRaw = central.fileNameRaw ?? Buffer.from(entry.name, 'utf8');
  const extraFieldRaw = central.extraFieldRaw ?? EMPTY;
  const fileCommentRaw = central.fileCommentRaw ?? EMPTY;
  return Object.assign(new yauzl.Entry(), {
    versionMadeBy: central.versionMadeBy,
    versionNeededToExtract: central.versionNeededToExtract,
    generalPurposeBitFlag: central.generalPurposeBitFlag,
    compressionMethod: entry.compressionMethod,
    lastModFileTime: central.lastModFileTime,
    lastModFileDate: central.lastModFileDate,
    crc32: entry.crc32,
    compressedSize: entry.compressedSizeBytes,
    uncompressedSize: entry.uncompressedSizeBytes,
    fileNameLength: fileNameRaw.length,
    extraFieldLength: extraFieldRaw.length,
    fileCommentLength: fileCommentRaw.length,
    internalFileAttributes: central.internalFileAttributes,
    externalFileAttributes: central.externalFileAttributes,
    relativeOffsetOfLocalHeader: central.relativeOffsetOfLocalHeader,
    fileNameRaw,
    extraFieldRaw,
    fileCommentRaw,
    extraFields: yauzl.parseExtraFields(extraFieldRaw),
    // decodeStrings is off: yauzl leaves the raw bytes in these.
    fileName: fileNameRaw,
    fileComment: fileCommentRaw,
    comment: fileCommentRaw,
  });
}

/** The central directory fields of an entry: kept ones for this module's entries, else from `source`. */
export function centralFieldsOf(entry: ZipEntry): CentralFields {
  return (entry as Partial<KeptEntry>).central ?? entry.source;
}

function keepEntry(fields: Omit<ZipEntry, 'source'>, central: CentralFields): KeptEntry {
  // dataStart is known once the layout is checked (openFrom).
  return Object.assign(Object.create(entryPrototype) as KeptEntry, fields, { central, dataStart: -1 });
}

export interface OpenEntryOptions {
  /** Give the stored (compressed) bytes as they are in the archive, for copying without re-deflating. */
  raw?: boolean;
}

export interface ZipArchive {
  /** The file the archive was opened from (openZip), for readers that go to the file directly. */
  readonly path?: string;
  readonly sizeBytes: number;
  readonly entries: readonly ZipEntry[];
  find(name: string): ZipEntry | undefined;
  openEntryStream(entry: ZipEntry, options?: OpenEntryOptions): Promise<Readable>;
  /** Reads a whole (small) entry; refuses one larger than maxBytes. */
  readEntry(entry: ZipEntry, maxBytes?: number): Promise<Buffer>;
  /** Reads at most the first byteCount bytes of an entry, then stops inflating. */
  readEntryHead(entry: ZipEntry, byteCount: number): Promise<Buffer>;
  /**
   * The first byteCount bytes (fewer for a shorter entry) of each of many entries, in their order:
   * read in file order through one window and inflated from the first stored bytes, without a
   * stream per entry, so every entry of a large IPA can be sniffed in little time.
   */
  readEntryHeads(entries: readonly ZipEntry[], byteCount: number): Promise<Buffer[]>;
  close(): void;
}

export interface OpenZipOptions {
  limits?: Partial<ZipLimits>;
  /**
   * openZip: a folder where the file's entry table is kept once read and checked (entry-table.ts),
   * so that opening the same file again reads neither its central directory nor its local headers.
   */
  entryTableDir?: string;
}

const UNIX_FILE_TYPE_MASK = 0o170000;
const UNIX_SYMLINK = 0o120000;
const UNIX_DIRECTORY = 0o040000;
const DEFAULT_MAX_READ_BYTES = 16 * 1024 * 1024;
// The stored bytes tried in turn to inflate an entry's head: a deflate block's code tables come
// first and take some tens to a few hundred bytes; past the last, the entry is streamed.
const HEAD_PREFIX_BYTES = [256, 4096, 65536];

const yauzlOptions: yauzl.Options = {
  lazyEntries: true,
  autoClose: false,
  // Names are decoded and checked here, so each refusal gets its own code.
  decodeStrings: false,
  validateEntrySizes: true,
};

/** Opens an IPA from a path. Reads the central directory only; entries are streamed on demand. */
export async function openZip(path: string, options: OpenZipOptions = {}): Promise<ZipArchive> {
  const head = await readHead(path);
  const file = await stat(path);
  let readRange: ReadRange | undefined;
  const open = async (): Promise<yauzl.ZipFile> => {
    const reader = await openFileReader(path);
    readRange = reader.readRange;
    return yauzl.fromRandomAccessReaderPromise(reader, file.size, yauzlOptions);
  };
  const tables =
    options.entryTableDir === undefined
      ? undefined
      : { dir: options.entryTableDir, key: tableKey(file, resolveZipLimits(options.limits)) };
  const kept = tables && (await readEntryTable(tables.dir, tables.key));
  const archive = await openFrom(
    open,
    head,
    options,
    (position, length, into) => readRange!(position, length, into),
    kept,
  );
  // A table kept for another reading of the file (none there, or one that no longer fits) is replaced.
  if (tables && !archive.fromTable) {
    await writeEntryTable(tables.dir, tables.key, {
      centralStart: archive.centralStart,
      entryCount: archive.entries.length,
      entries: archive.entries as KeptEntry[],
    });
  }
  return { ...archive, path };
}

/** The first bytes tell a truncated zip from something that is not a zip at all. */
async function readHead(path: string): Promise<Buffer> {
  let handle: FileHandle | undefined;
  try {
    handle = await openFile(path, 'r');
    const head = Buffer.alloc(4);
    const { bytesRead } = await handle.read(head, 0, 4, 0);
    return head.subarray(0, bytesRead);
  } catch (err) {
    throw new IpaError('NOT_A_ZIP', `Expected a readable file at ${path}, found none.`, { cause: err });
  } finally {
    await handle?.close();
  }
}

/** Opens an IPA held in memory (tests, small uploads). */
export function openZipFromBuffer(buffer: Buffer, options: OpenZipOptions = {}): Promise<ZipArchive> {
  const readRange: ReadRange = (position, length) =>
    Promise.resolve(buffer.subarray(position, position + length));
  return openFrom(
    () => yauzl.fromBufferPromise(buffer, yauzlOptions),
    buffer.subarray(0, 4),
    options,
    readRange,
  );
}

/** Opens an IPA behind any random-access reader (object storage ranges, for example). */
export async function openZipFromReader(
  reader: yauzl.RandomAccessReader,
  totalSizeBytes: number,
  options: OpenZipOptions = {},
): Promise<ZipArchive> {
  const readRange: ReadRange = (position, length, into) => {
    const wanted = Math.max(0, Math.min(length, totalSizeBytes - position));
    const bytes =
      into !== undefined && into.length >= wanted ? into.subarray(0, wanted) : Buffer.alloc(wanted);
    return new Promise((resolve, reject) => {
      if (bytes.length === 0) return resolve(bytes);
      reader.read(bytes, 0, bytes.length, position, (err) =>
        err ? reject(toZipError(err)) : resolve(bytes),
      );
    });
  };
  const head = await readRange(0, 4);
  return openFrom(
    () => yauzl.fromRandomAccessReaderPromise(reader, totalSizeBytes, yauzlOptions),
    head,
    options,
    readRange,
  );
}

async function openFrom(
  openYauzl: () => Promise<yauzl.ZipFile>,
  head: Buffer,
  options: OpenZipOptions,
  readRange: ReadRange,
  /** This file's entry table as an earlier opening checked it (openZip's entryTableDir). */
  kept?: EntryTable,
): Promise<ZipArchive & { centralStart: number; fromTable: boolean }> {
  let zip: yauzl.ZipFile;
  try {
    zip = await openYauzl();
  } catch (err) {
    throw toZipError(err, head);
  }
  try {
    const limits = resolveZipLimits(options.limits);
    // yauzl reads the central directory from here on; typed as a boolean by @types/yauzl.
    const centralStart = (zip as unknown as { readEntryCursor: number }).readEntryCursor;
    if (kept && kept.centralStart === centralStart && kept.entryCount === zip.entryCount) {
      const entries = kept.entries.map((entry) =>
        Object.assign(Object.create(entryPrototype) as KeptEntry, entry),
      );
      return {
        ...createArchive(zip, entries, readRange),
        entries,
        find: createFinder(entries),
        centralStart,
        fromTable: true,
      };
    }
    const listed = await listEntries(zip, limits);
    const dataStarts = await verifyLayout(readRange, zip.fileSize, listed.map(layoutFieldsOf), centralStart);
    const entries = listed.map((entry, i) => Object.assign(entry, { dataStart: dataStarts[i]! }));
    const archive = createArchive(zip, entries, readRange);
    const withTargets = await readSymlinkTargets(archive, entries, limits);
    return {
      ...archive,
      entries: withTargets,
      find: createFinder(withTargets),
      centralStart,
      fromTable: false,
    };
  } catch (err) {
    zip.close();
    throw toZipError(err);
  }
}

function layoutFieldsOf(entry: KeptEntry): CentralEntryFields {
  return {
    name: entry.name,
    nameRaw: entry.central.fileNameRaw ?? Buffer.from(entry.name, 'utf8'),
    flags: entry.central.generalPurposeBitFlag,
    method: entry.compressionMethod,
    crc32: entry.crc32,
    compressedSizeBytes: entry.compressedSizeBytes,
    uncompressedSizeBytes: entry.uncompressedSizeBytes,
    localHeaderOffset: entry.central.relativeOffsetOfLocalHeader,
  };
}

function listEntries(zip: yauzl.ZipFile, limits: ZipLimits): Promise<KeptEntry[]> {
  if (zip.entryCount > limits.maxEntryCount) {
    return Promise.reject(
      new IpaError(
        'ZIP_TOO_LARGE',
        `Expected at most ${limits.maxEntryCount} entries, found ${zip.entryCount}.`,
      ),
    );
  }
  return new Promise((resolve, reject) => {
    const entries: KeptEntry[] = [];
    const seen = new Set<string>();
    let totalBytes = 0;
    let storedBytes = 0;
    const fail = (err: unknown): void => {
      zip.removeAllListeners('entry');
      reject(toZipError(err));
    };
    zip.on('error', fail);
    zip.on('end', () => {
      try {
        assertSaneArchiveRatio(totalBytes, storedBytes, entries.length, limits);
        resolve(entries);
      } catch (err) {
        fail(err);
      }
    });
    zip.on('entry', (raw: yauzl.Entry) => {
      try {
        const entry = describeEntry(raw);
        const key = normalizeEntryKey(entry.name);
        if (seen.has(key)) {
          throw new IpaError(
            'ZIP_DUPLICATE_NAME',
            `Expected each entry name once, found "${entry.name}" twice.`,
          );
        }
        seen.add(key);
        assertSaneRatio(entry, limits);
        totalBytes += entry.uncompressedSizeBytes;
        storedBytes += entry.compressedSizeBytes;
        if (totalBytes > limits.maxTotalUncompressedBytes) {
          throw new IpaError(
            'ZIP_TOO_LARGE',
            `Expected at most ${limits.maxTotalUncompressedBytes} bytes once uncompressed, found more than ${totalBytes} bytes.`,
          );
        }
        entries.push(entry);
        zip.readEntry();
      } catch (err) {
        fail(err);
      }
    });
    zip.readEntry();
  });
}

function describeEntry(raw: yauzl.Entry): KeptEntry {
  // decodeStrings:false leaves fileName as bytes; decode it as yauzl would (UTF-8 flag, 0x7075 field).
  const name = yauzl.getFileNameLowLevel(raw.generalPurposeBitFlag, raw.fileNameRaw, raw.extraFields, false);
  assertSafeEntryName(name);
  // What cannot be inflated here cannot be checked: an IPA's entries are stored or deflated.
  if ((raw.generalPurposeBitFlag & FLAG_ENCRYPTED) !== 0) {
    throw new IpaError('ZIP_INVALID', `Expected entries without zip encryption, found "${name}" encrypted.`);
  }
  if (raw.compressionMethod !== 0 && raw.compressionMethod !== 8) {
    throw new IpaError(
      'ZIP_INVALID',
      `Expected "${name}" to be stored (method 0) or deflated (method 8), found method ${raw.compressionMethod}.`,
    );
  }
  // Upper 16 bits of the external attributes hold st_mode when made on Unix (APPNOTE 4.4.15).
  const mode = raw.externalFileAttributes >>> 16;
  const unixMode = mode === 0 ? undefined : mode;
  const fileType = mode & UNIX_FILE_TYPE_MASK;
  const nameIsUtf8 = raw.fileNameRaw.equals(Buffer.from(name, 'utf8'));
  return keepEntry(
    {
      name,
      isDirectory: name.endsWith('/') || fileType === UNIX_DIRECTORY,
      isSymlink: fileType === UNIX_SYMLINK,
      ...(unixMode === undefined ? {} : { unixMode }),
      compressedSizeBytes: raw.compressedSize,
      uncompressedSizeBytes: raw.uncompressedSize,
      compressionMethod: raw.compressionMethod,
      crc32: raw.crc32,
    },
    {
      versionMadeBy: raw.versionMadeBy,
      versionNeededToExtract: raw.versionNeededToExtract,
      generalPurposeBitFlag: raw.generalPurposeBitFlag,
      lastModFileTime: raw.lastModFileTime,
      lastModFileDate: raw.lastModFileDate,
      internalFileAttributes: raw.internalFileAttributes,
      externalFileAttributes: raw.externalFileAttributes,
      relativeOffsetOfLocalHeader: raw.relativeOffsetOfLocalHeader,
      // Copies, so yauzl's buffers for the record go with it.
      ...(nameIsUtf8 ? {} : { fileNameRaw: Buffer.from(raw.fileNameRaw) }),
      ...(raw.extraFieldRaw.length > 0 ? { extraFieldRaw: Buffer.from(raw.extraFieldRaw) } : {}),
      ...(raw.fileCommentRaw.length > 0 ? { fileCommentRaw: Buffer.from(raw.fileCommentRaw) } : {}),
    },
  );
}

function assertSaneRatio(entry: ZipEntry, limits: ZipLimits): void {
  if (entry.uncompressedSizeBytes <= limits.compressionRatioMinBytes) return;
  const ratio = entry.uncompressedSizeBytes / Math.max(entry.compressedSizeBytes, 1);
  if (ratio > limits.maxCompressionRatio) {
    throw new IpaError(
      'ZIP_BOMB',
      `Expected "${entry.name}" to compress at most ${limits.maxCompressionRatio}:1, found ${Math.round(ratio)}:1 ` +
        `(${entry.compressedSizeBytes} bytes inflating to ${entry.uncompressedSizeBytes}).`,
    );
  }
}

/**
 * The whole archive's ratio of declared to stored bytes: each entry may stay under the per-entry
 * threshold while thousands of them inflate to gigabytes. Stored bytes cannot be counted twice,
 * since the layout check refuses entries that share them.
 */
function assertSaneArchiveRatio(
  totalBytes: number,
  storedBytes: number,
  entryCount: number,
  limits: ZipLimits,
): void {
  if (totalBytes <= limits.archiveRatioMinBytes) return;
  const ratio = totalBytes / Math.max(storedBytes, 1);
  if (ratio > limits.maxArchiveCompressionRatio) {
    throw new IpaError(
      'ZIP_BOMB',
      `Expected the archive to compress at most ${limits.maxArchiveCompressionRatio}:1 as a whole, found ${Math.round(ratio)}:1 ` +
        `(${entryCount} entries of ${storedBytes} stored bytes inflating to ${totalBytes}).`,
    );
  }
}

function createFinder(entries: readonly ZipEntry[]): (name: string) => ZipEntry | undefined {
  const byName = new Map(entries.map((entry) => [normalizeEntryKey(entry.name), entry]));
  return (name) => byName.get(normalizeEntryKey(name));
}

function createArchive(zip: yauzl.ZipFile, entries: KeptEntry[], readRange: ReadRange): ZipArchive {
  const openEntryStream = async (entry: ZipEntry, options: OpenEntryOptions = {}): Promise<Readable> => {
    let source: Readable;
    try {
      source = await zip.openReadStreamPromise(entry.source, options.raw ? { decodeFileData: false } : {});
    } catch (err) {
      throw toZipError(err);
    }
    // Errors from yauzl and zlib arrive as plain Errors; hand callers IpaErrors only.
    const out = options.raw ? new PassThrough() : createCrcCheck(entry);
    source.on('error', (err) => out.destroy(toZipError(err)));
    out.on('close', () => source.destroy());
    return source.pipe(out);
  };

  const readEntry = async (entry: ZipEntry, maxBytes = DEFAULT_MAX_READ_BYTES): Promise<Buffer> => {
    if (entry.uncompressedSizeBytes > maxBytes) {
      throw new IpaError(
        'ZIP_TOO_LARGE',
        `Expected "${entry.name}" to hold at most ${maxBytes} bytes, found ${entry.uncompressedSizeBytes}.`,
      );
    }
    const chunks: Buffer[] = [];
    for await (const chunk of await openEntryStream(entry)) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  };

  const readEntryHead = async (entry: ZipEntry, byteCount: number): Promise<Buffer> => {
    const stream = await openEntryStream(entry);
    const chunks: Buffer[] = [];
    let length = 0;
    for await (const chunk of stream) {
      chunks.push(chunk as Buffer);
      length += (chunk as Buffer).length;
      if (length >= byteCount) break; // leaving the loop destroys the stream and stops inflating
    }
    return Buffer.concat(chunks).subarray(0, byteCount);
  };

  const readEntryHeads = async (wanted: readonly ZipEntry[], byteCount: number): Promise<Buffer[]> => {
    const heads: Buffer[] = new Array(wanted.length);
    const order = wanted.map((_, i) => i).sort((a, b) => dataStartOf(wanted[a]!) - dataStartOf(wanted[b]!));
    const window = createWindow(readRange, zip.fileSize);
    for (const index of order) {
      const entry = wanted[index]!;
      const start = dataStartOf(entry);
      // What an extractor would write, whatever size the headers declare (a streaming one may
      // not look): the stored bytes, or what the first of them inflate to.
      let head: Buffer | undefined;
      if (entry.compressionMethod === 0) {
        head = Buffer.from(await window.at(start, Math.min(byteCount, entry.compressedSizeBytes)));
      } else {
        for (const prefixBytes of HEAD_PREFIX_BYTES) {
          const prefix = await window.at(start, Math.min(prefixBytes, entry.compressedSizeBytes));
          const out = inflateHead(prefix, byteCount);
          // Fewer bytes than asked are the whole content only when the prefix was all of it.
          if (out !== undefined && (out.length === byteCount || prefix.length === entry.compressedSizeBytes))
            head = out;
          if (head !== undefined || prefix.length === entry.compressedSizeBytes) break;
        }
      }
      // Stored bytes that do not inflate to a head here go through the checked stream, which says why.
      heads[index] = head ?? (await readEntryHead(entry, byteCount));
    }
    return heads;
  };

  return {
    sizeBytes: zip.fileSize,
    entries,
    find: createFinder(entries),
    openEntryStream,
    readEntry,
    readEntryHead,
    readEntryHeads,
    close: () => zip.close(),
  };
}

/**
 * yauzl checks sizes but not the CRC-32, so a damaged entry could inflate to wrong bytes of the
 * right length; verify it as the data passes (APPNOTE 4.4.7). Only a fully read entry is checked.
 */
function createCrcCheck(entry: ZipEntry): Transform {
  let crc = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      crc = crc32(chunk, crc);
      callback(null, chunk);
    },
    flush(callback) {
      if (crc >>> 0 === entry.crc32 >>> 0) return callback();
      callback(
        new IpaError(
          'ZIP_INVALID',
          `Expected "${entry.name}" to have CRC-32 0x${hex32(entry.crc32)}, found 0x${hex32(crc)}: the archive is damaged.`,
        ),
      );
    },
  });
}

const hex32 = (value: number): string => (value >>> 0).toString(16).padStart(8, '0');

function dataStartOf(entry: ZipEntry): number {
  const start = (entry as Partial<KeptEntry>).dataStart;
  if (start === undefined || start < 0)
    throw new Error(`zip archive: "${entry.name}" is not an entry of this archive`);
  return start;
}

/**
 * At most the first `length` bytes that the first stored bytes of a deflate stream inflate to, or
 * undefined when they are not valid deflate data (the stream then says why). A sync flush gives
 * what the prefix holds without asking for the rest; the output is bounded, since a prefix of a
 * deflated run of zeros inflates a thousandfold.
 */
function inflateHead(prefix: Buffer, length: number): Buffer | undefined {
  try {
    const out = inflateRawSync(prefix, {
      finishFlush: zlibConstants.Z_SYNC_FLUSH,
      chunkSize: 1024,
      maxOutputLength: Math.max(prefix.length * 1032, 1024),
    });
    return Buffer.from(out.subarray(0, length));
  } catch {
    return undefined;
  }
}

/** A symlink's content is its target; refuse any that resolves outside its app bundle (or the archive). */
async function readSymlinkTargets(
  archive: ZipArchive,
  entries: ZipEntry[],
  limits: ZipLimits,
): Promise<ZipEntry[]> {
  const targets = new Map<string, string>();
  for (const entry of entries) {
    if (!entry.isSymlink) continue;
    targets.set(
      normalizeEntryKey(entry.name),
      (await archive.readEntry(entry, limits.maxSymlinkTargetBytes)).toString('utf8'),
    );
  }
  return entries.map((entry) => {
    const target = targets.get(normalizeEntryKey(entry.name));
    if (target === undefined) return entry;
    const root = enclosingAppDir(entry.name) ?? '';
    const resolved = resolveSymlink(entry.name, targets);
    if (resolved === undefined || !isInside(resolved, root)) {
      throw new IpaError(
        'SYMLINK_ESCAPES_BUNDLE',
        `Expected symlink "${entry.name}" to point inside ${root === '' ? 'the archive' : `"${root}"`}, found target "${target}".`,
      );
    }
    // Own fields only: `source` stays on the shared prototype.
    return Object.assign(Object.create(entryPrototype) as KeptEntry, entry, { symlinkTarget: target });
  });
}
