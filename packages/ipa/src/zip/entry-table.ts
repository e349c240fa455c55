/**
 * The entry table of an archive file as it was read and checked, kept so that opening the same
 * file again (the n-th sign of a version) skips yauzl's walk of the central directory and the
 * layout check's read of every local header: some 0.3 s for an IPA of 9,000 entries.
 *
 * The key is the file itself, not its bytes: device, inode, size, modification and change times
 * (a file written again or replaced gets another key), and the limits it was checked against.
 * A table is only ever the one this package made for that very file; the folder must hold only
 * what the signer wrote (the package README, "The n-th sign of a version").
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Stats } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { CentralFields, ZipEntry } from './entry.js';
import type { ZipLimits } from './limits.js';

const FORMAT = 1;

/** Where a signing cache folder (sign's `cacheDir`) keeps its source's entry table. */
export const entryTablesIn = (cacheDir: string) => join(cacheDir, 'entry-tables');

/** An entry as openZip keeps it (archive.ts, KeptEntry), without its prototype. */
export interface TableEntry extends Omit<ZipEntry, 'source'> {
  readonly dataStart: number;
  readonly central: CentralFields;
}

export interface EntryTable {
  /** Where the central directory starts, and how many entries it lists (yauzl's reading of the end record). */
  readonly centralStart: number;
  readonly entryCount: number;
  readonly entries: TableEntry[];
}

// One array per entry, in this order: a table of 9,000 entries is some 1.5 MB and parses in ms.
type Row = [
  name: string,
  kind: number,
  unixMode: number | null,
  compressed: number,
  uncompressed: number,
  method: number,
  crc32: number,
  dataStart: number,
  versionMadeBy: number,
  versionNeeded: number,
  flags: number,
  time: number,
  date: number,
  internal: number,
  external: number,
  localHeaderOffset: number,
  nameRaw: string | null,
  extra: string | null,
  comment: string | null,
  symlinkTarget: string | null,
];

const DIRECTORY = 1;
const SYMLINK = 2;

/**
 * A file's identity on disk: device, inode, size, modification and change times. A file written
 * again or replaced has another; what is kept for a file (its table here, the stretch to copy
 * ahead in sign-ipa/copy-template.ts) is keyed by it.
 */
export const fileIdentity = (file: Stats): number[] => [
  file.dev,
  file.ino,
  file.size,
  file.mtimeMs,
  file.ctimeMs,
];

/** The file name of this file's table: its identity on disk and the limits it was checked against. */
export function tableKey(file: Stats, limits: ZipLimits): string {
  return createHash('sha256')
    .update(JSON.stringify([FORMAT, ...fileIdentity(file), limits]))
    .digest('hex');
}

const tablePath = (dir: string, key: string) => join(dir, `${key}.json`);

/** The kept table, or undefined when there is none or it cannot be read as one. */
export async function readEntryTable(dir: string, key: string): Promise<EntryTable | undefined> {
  let text: string;
  try {
    text = await readFile(tablePath(dir, key), 'utf8');
  } catch {
    return undefined;
  }
  try {
    const kept = JSON.parse(text) as {
      format: number;
      centralStart: number;
      entryCount: number;
      rows: Row[];
    };
    if (kept.format !== FORMAT || !Array.isArray(kept.rows) || kept.rows.length !== kept.entryCount)
      return undefined;
    return { centralStart: kept.centralStart, entryCount: kept.entryCount, entries: kept.rows.map(fromRow) };
  } catch {
    return undefined; // damaged: the file is read and checked again, and its table kept anew
  }
}

/**
 * Keeps the table (written whole, then renamed: a reader never sees half of one) in place of any
 * other in the folder: a folder serves one source file (a version's stored IPA), and a source
 * copied afresh for each sign (from object storage) must not leave a table behind each time.
 * Failures only cost time.
 */
export async function writeEntryTable(dir: string, key: string, table: EntryTable): Promise<void> {
  const target = tablePath(dir, key);
  const temporary = `${target}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await mkdir(dir, { recursive: true });
    const body = JSON.stringify({
      format: FORMAT,
      centralStart: table.centralStart,
      entryCount: table.entryCount,
      rows: table.entries.map(toRow),
    });
    await writeFile(temporary, body);
    await rename(temporary, target);
    for (const name of await readdir(dir))
      if (name.endsWith('.json') && name !== `${key}.json`) await rm(join(dir, name), { force: true });
  } catch {
    await rm(temporary, { force: true }).catch(() => undefined);
  }
}

const base64 = (bytes: Buffer | undefined) => (bytes === undefined ? null : bytes.toString('base64'));

function toRow(entry: TableEntry): Row {
  const c = entry.central;
  return [
    entry.name,
    (entry.isDirectory ? DIRECTORY : 0) | (entry.isSymlink ? SYMLINK : 0),
    entry.unixMode ?? null,
    entry.compressedSizeBytes,
    entry.uncompressedSizeBytes,
    entry.compressionMethod,
    entry.crc32,
    entry.dataStart,
    c.versionMadeBy,
    c.versionNeededToExtract,
    c.generalPurposeBitFlag,
    c.lastModFileTime,
    c.lastModFileDate,
    c.internalFileAttributes,
    c.externalFileAttributes,
    c.relativeOffsetOfLocalHeader,
    base64(c.fileNameRaw),
    base64(c.extraFieldRaw),
    base64(c.fileCommentRaw),
    entry.symlinkTarget ?? null,
  ];
}

function fromRow(row: Row): TableEntry {
  const [nameRaw, extra, comment, symlinkTarget, unixMode] = [row[16], row[17], row[18], row[19], row[2]];
  return {
    name: row[0],
    isDirectory: (row[1] & DIRECTORY) !== 0,
    isSymlink: (row[1] & SYMLINK) !== 0,
    ...(symlinkTarget === null ? {} : { symlinkTarget }),
    ...(unixMode === null ? {} : { unixMode }),
    compressedSizeBytes: row[3],
    uncompressedSizeBytes: row[4],
    compressionMethod: row[5],
    crc32: row[6],
    dataStart: row[7],
    central: {
      versionMadeBy: row[8],
      versionNeededToExtract: row[9],
      generalPurposeBitFlag: row[10],
      lastModFileTime: row[11],
      lastModFileDate: row[12],
      internalFileAttributes: row[13],
      externalFileAttributes: row[14],
      relativeOffsetOfLocalHeader: row[15],
      ...(nameRaw === null ? {} : { fileNameRaw: Buffer.from(nameRaw, 'base64') }),
      ...(extra === null ? {} : { extraFieldRaw: Buffer.from(extra, 'base64') }),
      ...(comment === null ? {} : { fileCommentRaw: Buffer.from(comment, 'base64') }),
    },
  };
}
