/**
 * The archive's byte layout, checked once when it is opened: every entry's local record agrees
 * with its central directory entry, and the records follow one another from the first byte to the
 * central directory, each once. yauzl reads an entry's bytes wherever its central entry points, so
 * without this many central entries can share one record (signing copies it once per entry), a
 * local header can describe other bytes than the central directory does, and a record that no
 * central entry lists is still extracted by a reader that streams the local headers (as iOS's
 * installer does), unseen by any check.
 */
import { IpaError } from '../errors.js';
import { LOCAL_SIGNATURE, MAX_32 } from './records.js';

/**
 * Reads `length` bytes at `position` (fewer only where the file ends), into `into` when it is
 * given and large enough (the answer may then be a view of it).
 */
export type ReadRange = (position: number, length: number, into?: Buffer) => Promise<Buffer>;

/** What the layout check needs of an entry: its central directory fields. */
export interface CentralEntry {
  readonly name: string;
  readonly nameRaw: Buffer;
  readonly flags: number;
  readonly method: number;
  readonly crc32: number;
  readonly compressedSizeBytes: number;
  readonly uncompressedSizeBytes: number;
  readonly localHeaderOffset: number;
}

// General purpose flags (APPNOTE 4.4.4): bit 0 encrypted, bit 3 sizes in a data descriptor.
export const FLAG_ENCRYPTED = 0x1;
const FLAG_DATA_DESCRIPTOR = 0x8;
const DATA_DESCRIPTOR_SIGNATURE = 0x08074b50;
const ZIP64_EXTRA_ID = 0x0001;
const LOCAL_HEADER_BYTES = 30;
// Local headers are read through a window this large: one read covers the headers of many small
// entries, and a large entry costs one small read.
const WINDOW_BYTES = 64 * 1024;

/**
 * Checks the layout and answers where each entry's stored bytes start (in `entries` order).
 * `centralStart` is the offset of the central directory.
 */
export async function verifyLayout(
  read: ReadRange,
  fileSizeBytes: number,
  entries: readonly CentralEntry[],
  centralStart: number,
): Promise<number[]> {
  const window = createWindow(read, fileSizeBytes);
  const order = entries
    .map((_, i) => i)
    .sort((a, b) => entries[a]!.localHeaderOffset - entries[b]!.localHeaderOffset);
  const dataStarts: number[] = new Array(entries.length);
  let expected = 0;
  let previous: CentralEntry | undefined;
  for (const index of order) {
    const entry = entries[index]!;
    const offset = entry.localHeaderOffset;
    if (offset < expected) {
      throw new IpaError(
        'ZIP_OVERLAP',
        `Expected each entry's bytes to follow the previous entry's, found "${entry.name}" starting at offset ${offset}, inside "${previous!.name}" (which ends at ${expected}).`,
      );
    }
    if (offset > expected) throw unlisted(expected, offset - expected);
    const { dataStart, end } = await readLocalRecord(window, entry, centralStart);
    dataStarts[index] = dataStart;
    expected = end;
    previous = entry;
  }
  if (expected < centralStart) throw unlisted(expected, centralStart - expected);
  return dataStarts;
}

function unlisted(at: number, length: number): IpaError {
  return new IpaError(
    'ZIP_UNLISTED_DATA',
    `Expected the entries to follow one another up to the central directory, found ${length} bytes at offset ${at} that no central directory entry lists.`,
  );
}

/** Checks one local record (APPNOTE 4.3.7) against its central entry; answers where its data starts and its record ends. */
async function readLocalRecord(
  window: Window,
  entry: CentralEntry,
  centralStart: number,
): Promise<{ dataStart: number; end: number }> {
  const offset = entry.localHeaderOffset;
  const where = `the local header of "${entry.name}" at offset ${offset}`;
  const header = await window.at(offset, LOCAL_HEADER_BYTES);
  // local file header: signature, version needed, flags, method, time, date, crc-32,
  // compressed size, uncompressed size, name length, extra field length; then name, extra field
  const signature = header.readUInt32LE(0);
  if (signature !== LOCAL_SIGNATURE) {
    throw new IpaError(
      'ZIP_INVALID',
      `Expected a local file header for "${entry.name}" at offset ${offset}, found 0x${hex32(signature)}.`,
    );
  }
  const flags = header.readUInt16LE(6);
  const method = header.readUInt16LE(8);
  const crc = header.readUInt32LE(14);
  let compressedSize = header.readUInt32LE(18);
  let uncompressedSize = header.readUInt32LE(22);
  const nameLength = header.readUInt16LE(26);
  const extraLength = header.readUInt16LE(28);
  const rest = await window.at(offset + LOCAL_HEADER_BYTES, nameLength + extraLength);
  const name = rest.subarray(0, nameLength);
  if (!name.equals(entry.nameRaw)) {
    throw mismatch(where, 'name', JSON.stringify(entry.name), JSON.stringify(name.toString('utf8')));
  }
  if (method !== entry.method) throw mismatch(where, 'compression method', entry.method, method);
  for (const [bit, what] of [
    [FLAG_ENCRYPTED, 'encryption flag'],
    [FLAG_DATA_DESCRIPTOR, 'data descriptor flag'],
  ] as const) {
    if ((flags & bit) !== (entry.flags & bit))
      throw mismatch(where, what, entry.flags & bit ? 'set' : 'clear', flags & bit ? 'set' : 'clear');
  }
  // Sizes of 0xffffffff are in the zip64 extra field, uncompressed first (APPNOTE 4.5.3).
  const zip64 = findExtraField(rest.subarray(nameLength), ZIP64_EXTRA_ID);
  if (zip64 !== undefined) {
    let at = 0;
    if (uncompressedSize === MAX_32 && at + 8 <= zip64.length) {
      uncompressedSize = Number(zip64.readBigUInt64LE(at));
      at += 8;
    }
    if (compressedSize === MAX_32 && at + 8 <= zip64.length)
      compressedSize = Number(zip64.readBigUInt64LE(at));
  }
  const hasDescriptor = (entry.flags & FLAG_DATA_DESCRIPTOR) !== 0;
  // With a data descriptor the local header may leave the CRC and sizes at 0 (APPNOTE 4.4.4).
  const agrees = (local: number, central: number): boolean =>
    local === central || (hasDescriptor && (local === 0 || local === MAX_32));
  if (crc !== entry.crc32 >>> 0 && !(hasDescriptor && crc === 0))
    throw mismatch(where, 'CRC-32', `0x${hex32(entry.crc32)}`, `0x${hex32(crc)}`);
  if (!agrees(compressedSize, entry.compressedSizeBytes))
    throw mismatch(where, 'compressed size', entry.compressedSizeBytes, compressedSize);
  if (!agrees(uncompressedSize, entry.uncompressedSizeBytes))
    throw mismatch(where, 'uncompressed size', entry.uncompressedSizeBytes, uncompressedSize);

  const dataStart = offset + LOCAL_HEADER_BYTES + nameLength + extraLength;
  const dataEnd = dataStart + entry.compressedSizeBytes;
  let end = dataEnd;
  if (hasDescriptor)
    end += await readDataDescriptor(
      window,
      entry,
      dataEnd,
      Math.max(0, centralStart - dataEnd),
      zip64 !== undefined,
    );
  if (end > centralStart) {
    throw new IpaError(
      'ZIP_OVERLAP',
      `Expected "${entry.name}" to end before the central directory at offset ${centralStart}, found it ends at ${end}.`,
    );
  }
  return { dataStart, end };
}

/**
 * The data descriptor after an entry's data (APPNOTE 4.3.9): an optional signature, the CRC-32,
 * then both sizes in 4 bytes each, or 8 when the local header has a zip64 field. Answers its length.
 */
async function readDataDescriptor(
  window: Window,
  entry: CentralEntry,
  at: number,
  room: number,
  isZip64: boolean,
): Promise<number> {
  const bytes = await window.at(at, Math.min(24, room), true);
  const signed = bytes.length >= 4 && bytes.readUInt32LE(0) === DATA_DESCRIPTOR_SIGNATURE;
  for (const hasSignature of signed ? [true, false] : [false]) {
    for (const wide of isZip64 ? [true, false] : [false, true]) {
      const base = hasSignature ? 4 : 0;
      const length = base + 4 + (wide ? 16 : 8);
      if (length > bytes.length) continue;
      const crc = bytes.readUInt32LE(base);
      const compressed = wide ? Number(bytes.readBigUInt64LE(base + 4)) : bytes.readUInt32LE(base + 4);
      const uncompressed = wide ? Number(bytes.readBigUInt64LE(base + 12)) : bytes.readUInt32LE(base + 8);
      if (
        crc === entry.crc32 >>> 0 &&
        compressed === entry.compressedSizeBytes &&
        uncompressed === entry.uncompressedSizeBytes
      )
        return length;
    }
  }
  throw new IpaError(
    'ZIP_HEADER_MISMATCH',
    `Expected the data descriptor of "${entry.name}" at offset ${at} to repeat the CRC-32 0x${hex32(entry.crc32)} and sizes ${entry.compressedSizeBytes}/${entry.uncompressedSizeBytes} of its central directory entry, found bytes 0x${bytes.toString('hex')}.`,
  );
}

function mismatch(where: string, field: string, central: string | number, local: string | number): IpaError {
  return new IpaError(
    'ZIP_HEADER_MISMATCH',
    `Expected ${where} to give the ${field} its central directory entry gives (${central}), found ${local}.`,
  );
}

/** The data of the first extra field with this id (APPNOTE 4.5.1: id, length, data; little-endian). */
function findExtraField(extra: Buffer, id: number): Buffer | undefined {
  for (let at = 0; at + 4 <= extra.length;) {
    const length = extra.readUInt16LE(at + 2);
    if (extra.readUInt16LE(at) === id) return extra.subarray(at + 4, Math.min(extra.length, at + 4 + length));
    at += 4 + length;
  }
  return undefined;
}

const hex32 = (value: number): string => (value >>> 0).toString(16).padStart(8, '0');

interface Window {
  /** `length` bytes at `position`; with `upTo`, fewer where the file ends, else that is ZIP_TRUNCATED. */
  at(position: number, length: number, upTo?: boolean): Promise<Buffer>;
}

/**
 * Serves reads that mostly go forward through the file from one window read at a time, into one
 * buffer: what it answers is valid until the next call.
 */
export function createWindow(read: ReadRange, fileSizeBytes: number, windowBytes = WINDOW_BYTES): Window {
  let start = 0;
  let bytes: Buffer = Buffer.alloc(0);
  const buffer = Buffer.allocUnsafe(windowBytes);
  return {
    async at(position, length, upTo = false) {
      if (position < start || position + length > start + bytes.length) {
        const wanted = Math.max(0, Math.min(Math.max(length, windowBytes), fileSizeBytes - position));
        bytes =
          wanted === 0
            ? Buffer.alloc(0)
            : await read(position, wanted, wanted <= buffer.length ? buffer : undefined);
        start = position;
      }
      const from = position - start;
      const got = bytes.subarray(from, from + length);
      if (got.length < length && !upTo) {
        throw new IpaError(
          'ZIP_TRUNCATED',
          `Expected ${length} bytes at offset ${position} of the archive, found the file ends first.`,
        );
      }
      return got;
    },
  };
}
