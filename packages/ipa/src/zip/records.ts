/** Zip records as APPNOTE lays them out: local and central headers, zip64 extra field, end records. */

export const LOCAL_SIGNATURE = 0x04034b50;
const CENTRAL_SIGNATURE = 0x02014b50;
const END_SIGNATURE = 0x06054b50;
const ZIP64_END_SIGNATURE = 0x06064b50;
const ZIP64_LOCATOR_SIGNATURE = 0x07064b50;
const ZIP64_EXTRA_ID = 0x0001;
export const MAX_32 = 0xffffffff;
const MAX_16 = 0xffff;
export const FLAG_UTF8 = 0x0800;
// "made by" Unix (3) with spec 6.3, so external attributes carry st_mode
export const MADE_BY_UNIX = (3 << 8) | 63;

export interface CentralRecord {
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

export function dosDateTime(date: Date): { time: number; date: number } {
  const year = Math.max(1980, date.getFullYear());
  return {
    time: (date.getHours() << 11) | (date.getMinutes() << 5) | Math.floor(date.getSeconds() / 2),
    date: ((year - 1980) << 9) | ((date.getMonth() + 1) << 5) | date.getDate(),
  };
}

/** The length of localHeader(r), without building it: 30 bytes, the name, a zip64 field when needed. */
export function localHeaderLength(r: {
  name: { length: number };
  compressedSize: number;
  uncompressedSize: number;
}): number {
  return 30 + r.name.length + (r.compressedSize >= MAX_32 || r.uncompressedSize >= MAX_32 ? 4 + 16 : 0);
}

/** Local file header (APPNOTE 4.3.7); sizes over 4 GiB go in a zip64 extra field. */
export function localHeader(r: Omit<CentralRecord, 'offset'>): Buffer {
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

/**
 * The central directory's headers (APPNOTE 4.3.12), in order, laid out in one buffer: an IPA's tens
 * of thousands of records are written in place rather than each as its own header, name and extra
 * field joined. Fields that overflow move to the zip64 extra field.
 */
export function centralDirectory(records: readonly CentralRecord[]): Buffer {
  const extraOf = (r: CentralRecord) =>
    (r.uncompressedSize >= MAX_32 ? 8 : 0) +
    (r.compressedSize >= MAX_32 ? 8 : 0) +
    (r.offset >= MAX_32 ? 8 : 0);
  let total = 0;
  for (const r of records) {
    const extra = extraOf(r);
    total += 46 + r.name.length + (extra > 0 ? 4 + extra : 0);
  }
  const out = Buffer.allocUnsafe(total);
  let at = 0;
  for (const r of records) {
    const extra = extraOf(r);
    out.writeUInt32LE(CENTRAL_SIGNATURE, at);
    out.writeUInt16LE(r.versionMadeBy, at + 4);
    out.writeUInt16LE(extra > 0 ? 45 : 20, at + 6);
    out.writeUInt16LE(r.flags, at + 8);
    out.writeUInt16LE(r.method, at + 10);
    out.writeUInt16LE(r.dosTime, at + 12);
    out.writeUInt16LE(r.dosDate, at + 14);
    out.writeUInt32LE(r.crc, at + 16);
    out.writeUInt32LE(r.compressedSize >= MAX_32 ? MAX_32 : r.compressedSize, at + 20);
    out.writeUInt32LE(r.uncompressedSize >= MAX_32 ? MAX_32 : r.uncompressedSize, at + 24);
    out.writeUInt16LE(r.name.length, at + 28);
    out.writeUInt16LE(extra > 0 ? 4 + extra : 0, at + 30);
    out.writeUInt16LE(0, at + 32); // comment length
    out.writeUInt16LE(0, at + 34); // disk number start
    out.writeUInt16LE(0, at + 36); // internal attributes
    out.writeUInt32LE(r.externalAttributes, at + 38);
    out.writeUInt32LE(r.offset >= MAX_32 ? MAX_32 : r.offset, at + 42);
    at += 46;
    at += r.name.copy(out, at);
    if (extra > 0) {
      // The zip64 extra field: the overflowing values, in this order (APPNOTE 4.5.3).
      out.writeUInt16LE(ZIP64_EXTRA_ID, at);
      out.writeUInt16LE(extra, at + 2);
      at += 4;
      for (const value of [r.uncompressedSize, r.compressedSize, r.offset])
        if (value >= MAX_32) {
          out.writeBigUInt64LE(BigInt(value), at);
          at += 8;
        }
    }
  }
  return out;
}

function zip64Extra(values: number[]): Buffer {
  const extra = Buffer.alloc(4 + values.length * 8);
  extra.writeUInt16LE(ZIP64_EXTRA_ID, 0);
  extra.writeUInt16LE(values.length * 8, 2);
  values.forEach((value, i) => extra.writeBigUInt64LE(BigInt(value), 4 + i * 8));
  return extra;
}

/** End of central directory, preceded by the zip64 end record and locator when any field overflows. */
export function endRecords(count: number, centralStart: number, centralSize: number): Buffer {
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
