/**
 * A minimal zip writer for tests, so each bad archive can be built exactly as named (duplicate
 * names, absolute paths, symlinks, bombs) — ordinary writers refuse to produce most of them.
 * Layout per APPNOTE 4.3: local headers + data, central directory, end record.
 */
import { deflateRawSync, crc32 } from 'node:zlib';

export interface TestZipEntry {
  name: string;
  data?: Buffer | string;
  /** Unix st_mode, stored in the upper 16 bits of the external attributes. */
  mode?: number;
  /** Deflate (8) by default; 0 stores. */
  method?: 0 | 8;
  /** zlib's deflate level (6 by default). */
  level?: number;
}

export const SYMLINK_MODE = 0o120777;
export const FILE_MODE = 0o100644;
export const EXECUTABLE_MODE = 0o100755;

/** One entry's parts, for assembling archives no writer would produce (shared or hidden records). */
export interface ZipRecord {
  /** Local file header (APPNOTE 4.3.7) and name. */
  readonly local: Buffer;
  /** The stored bytes. */
  readonly data: Buffer;
  /** Central directory header (APPNOTE 4.3.12) and name; set its local header offset (at 42) before use. */
  readonly central: Buffer;
}

export function zipRecord(entry: TestZipEntry): ZipRecord {
  const content = Buffer.from(entry.data ?? '');
  const method = entry.name.endsWith('/') ? 0 : (entry.method ?? 8);
  const stored = method === 8 ? deflateRawSync(content, { level: entry.level ?? 6 }) : content;
  const name = Buffer.from(entry.name, 'utf8');
  const crc = crc32(content);
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4); // version needed
  local.writeUInt16LE(0x0800, 6); // UTF-8 names
  local.writeUInt16LE(method, 8);
  local.writeUInt32LE(crc, 14);
  local.writeUInt32LE(stored.length, 18);
  local.writeUInt32LE(content.length, 22);
  local.writeUInt16LE(name.length, 26);

  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE((3 << 8) | 20, 4); // made by Unix
  central.writeUInt16LE(20, 6);
  central.writeUInt16LE(0x0800, 8);
  central.writeUInt16LE(method, 10);
  central.writeUInt32LE(crc, 16);
  central.writeUInt32LE(stored.length, 20);
  central.writeUInt32LE(content.length, 24);
  central.writeUInt16LE(name.length, 28);
  const mode = entry.mode ?? (entry.name.endsWith('/') ? 0o040755 : FILE_MODE);
  central.writeUInt32LE((mode << 16) >>> 0, 38);
  return { local: Buffer.concat([local, name]), data: stored, central: Buffer.concat([central, name]) };
}

/** `body` (the local records), then the central headers as given, then the end record. */
export function assembleZip(body: Buffer, centrals: readonly Buffer[]): Buffer {
  const centralDirectory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(centrals.length, 8);
  end.writeUInt16LE(centrals.length, 10);
  end.writeUInt32LE(centralDirectory.length, 12);
  end.writeUInt32LE(body.length, 16);
  return Buffer.concat([body, centralDirectory, end]);
}

export function buildZip(entries: readonly TestZipEntry[]): Buffer {
  const body: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const record = zipRecord(entry);
    record.central.writeUInt32LE(offset, 42);
    body.push(record.local, record.data);
    centrals.push(record.central);
    offset += record.local.length + record.data.length;
  }
  return assembleZip(Buffer.concat(body), centrals);
}

/** An archive's parts (no comment, no zip64): its local records, and each central header. */
function splitZip(zip: Buffer): { body: Buffer; centrals: Buffer[] } {
  // End record (APPNOTE 4.3.16): entry count at 10, central directory offset at 16.
  const end = zip.length - 22;
  const count = zip.readUInt16LE(end + 10);
  const centrals: Buffer[] = [];
  let at = zip.readUInt32LE(end + 16);
  const body = zip.subarray(0, at);
  for (let i = 0; i < count; i++) {
    const length = 46 + zip.readUInt16LE(at + 28) + zip.readUInt16LE(at + 30) + zip.readUInt16LE(at + 32);
    centrals.push(zip.subarray(at, at + length));
    at += length;
  }
  return { body, centrals };
}

/** `zip` with `copies` more central entries (named `<name>.copy-N`) over the first file's local record. */
export function withSharedRecord(zip: Buffer, copies: number): Buffer {
  const { body, centrals } = splitZip(zip);
  const source = centrals.find(
    (central) => !central.toString('utf8', 46, 46 + central.readUInt16LE(28)).endsWith('/'),
  )!;
  const name = source.toString('utf8', 46, 46 + source.readUInt16LE(28));
  const added = Array.from({ length: copies }, (_, i) => {
    const copy = Buffer.concat([source.subarray(0, 46), Buffer.from(`${name}.copy-${i}`)]);
    copy.writeUInt16LE(copy.length - 46, 28);
    copy.writeUInt16LE(0, 30); // no extra field
    copy.writeUInt16LE(0, 32); // no comment
    return copy;
  });
  return assembleZip(body, [...centrals, ...added]);
}

/** `zip` with one more entry, its record after the others. */
export function withEntry(zip: Buffer, entry: TestZipEntry): Buffer {
  const { body, centrals } = splitZip(zip);
  const record = zipRecord(entry);
  record.central.writeUInt32LE(body.length, 42);
  return assembleZip(Buffer.concat([body, record.local, record.data]), [...centrals, record.central]);
}
