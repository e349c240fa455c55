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

/** Local file header (APPNOTE 4.3.7); sizes over 4 GiB go in a zip64 extra field. */
/** The length of localHeader(r), without building it: 30 bytes, the name, a zip64 field when needed. */
export function localHeaderLength(
  r: Pick<CentralRecord, 'name' | 'compressedSize' | 'uncompressedSize'>,
): number {
  return 30 + r.name.length + (r.compressedSize >= MAX_32 || r.uncompressedSize >= MAX_32 ? 4 + 16 : 0);
}

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

/** Central directory header (APPNOTE 4.3.12); fields that overflow move to the zip64 extra field. */
export function centralHeader(r: CentralRecord): Buffer {
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
