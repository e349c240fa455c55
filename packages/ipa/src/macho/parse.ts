/**
 * Mach-O reading: fat and thin files, every slice, the load commands signing and checking need.
 * Offsets are from <mach-o/loader.h> and <mach-o/fat.h>; every length is checked before use.
 */
import { IpaError } from '../errors.js';
import * as C from './constants.js';
import { archName } from './arch.js';
import { need, readCommandString, toSafeNumber, truncated } from './bytes.js';
import { readSegment, type Segment } from './segment.js';

export type { Segment } from './segment.js';

/** One load command as the header lists it: its type and where it sits in the slice. */
export interface LoadCommand {
  readonly command: number;
  readonly offset: number;
  readonly size: number;
}

export interface DylibReference {
  readonly command: number;
  readonly commandOffset: number;
  readonly name: string;
}

export interface MachOSlice {
  /** Where the slice starts in the file (0 for a thin file) and its length. */
  readonly offset: number;
  readonly size: number;
  readonly arch: string;
  readonly cpuType: number;
  readonly cpuSubtype: number;
  readonly is64: boolean;
  readonly fileType: number;
  /** mach_header flags (MH_PIE 0x200000, MH_TWOLEVEL 0x80, ...). */
  readonly flags: number;
  readonly commandCount: number;
  readonly commandsSizeBytes: number;
  /** 28 for mach_header, 32 for mach_header_64. */
  readonly headerSizeBytes: number;
  readonly loadCommands: readonly LoadCommand[];
  readonly segments: readonly Segment[];
  /**
   * 0 when every LC_ENCRYPTION_INFO(_64) of the slice says cryptid 0 (or there is none); else the
   * first non-zero cryptid. The kernel honours any of them, so one that is not 0 is enough.
   */
  readonly cryptid: number;
  readonly encryptionCommandOffset?: number;
  readonly codeSignature?: {
    readonly commandOffset: number;
    readonly dataOffset: number;
    readonly dataSize: number;
  };
  readonly dylibs: readonly DylibReference[];
  readonly rpaths: readonly string[];
  readonly installName?: string;
  /** Bytes free between the end of the load commands and the first section's data. */
  readonly freeCommandBytes: number;
}

export interface MachOFile {
  readonly isFat: boolean;
  /** 'fat32' | 'fat64' for fat files. */
  readonly fatKind?: 'fat32' | 'fat64';
  readonly slices: readonly MachOSlice[];
}

const FAT_HEADER_BYTES = 8;
const FAT_ARCH_BYTES = 20;
const FAT_ARCH_64_BYTES = 32;
// The kernel reads a fat header's architecture table from the file's first page (16 KiB on iOS).
const MAX_FAT_TABLE_BYTES = 16 * 1024;

/**
 * The architecture count a fat header may have: at least one, and a table that fits in the first
 * page. A file with fat magic and another count is a damaged Mach-O, to be refused, not skipped.
 */
export function fatTableBytes(count: number, is64: boolean, where: string): number {
  const bytes = FAT_HEADER_BYTES + count * (is64 ? FAT_ARCH_64_BYTES : FAT_ARCH_BYTES);
  if (count === 0 || bytes > MAX_FAT_TABLE_BYTES) {
    const most = Math.floor(
      (MAX_FAT_TABLE_BYTES - FAT_HEADER_BYTES) / (is64 ? FAT_ARCH_64_BYTES : FAT_ARCH_BYTES),
    );
    throw new IpaError(
      'MACHO_BAD_MAGIC',
      `Expected ${where} to list 1 to ${most} architectures in its fat header, found ${count}.`,
    );
  }
  return bytes;
}

/**
 * True when the first 4 bytes are a Mach-O magic: a thin header in either byte order, or a fat
 * header. Nothing else is asked of the file: one that starts like a Mach-O is code to its loader,
 * so it is parsed, and refused when damaged. (A Java class file shares 0xcafebabe and is refused
 * with the damaged ones: telling them apart by the architecture count would let a fat file with
 * many architectures through unchecked.)
 */
export function isMachO(head: Buffer): boolean {
  if (head.length < 4) return false;
  const be = head.readUInt32BE(0);
  // 0xfeedface/0xfeedfacf read big-endian: a big-endian file; 0xcefaedfe/0xcffaedfe: a little-endian one.
  return (
    be === C.MH_MAGIC ||
    be === C.MH_MAGIC_64 ||
    be === C.MH_CIGAM ||
    be === C.MH_CIGAM_64 ||
    be === C.FAT_MAGIC ||
    be === C.FAT_MAGIC_64
  );
}

/** The earlier name of isMachO, kept for existing callers. */
export const isMachOHead = isMachO;

/** Parses a whole Mach-O file held in memory. `where` names it in error messages. */
export function parseMachO(bytes: Buffer, where = 'Mach-O file'): MachOFile {
  need(bytes, 0, 4, where, 'a Mach-O header');
  const be = bytes.readUInt32BE(0);
  if (be === C.FAT_MAGIC || be === C.FAT_MAGIC_64) return parseFat(bytes, be === C.FAT_MAGIC_64, where);
  return { isFat: false, slices: [parseSlice(bytes, 0, bytes.length, where)] };
}

function parseFat(bytes: Buffer, is64: boolean, where: string): MachOFile {
  need(bytes, 0, FAT_HEADER_BYTES, where, 'a fat header');
  // fat_header: magic, nfat_arch (big-endian)
  const count = bytes.readUInt32BE(4);
  const tableBytes = fatTableBytes(count, is64, where);
  const entryBytes = is64 ? FAT_ARCH_64_BYTES : FAT_ARCH_BYTES;
  need(bytes, FAT_HEADER_BYTES, count * entryBytes, where, 'the fat architecture table');
  const slices: MachOSlice[] = [];
  for (let i = 0; i < count; i++) {
    const at = FAT_HEADER_BYTES + i * entryBytes;
    // fat_arch: cputype, cpusubtype, offset, size, align; fat_arch_64: same with 64-bit offset and size
    const offset = is64 ? toSafeNumber(bytes.readBigUInt64BE(at + 8), where) : bytes.readUInt32BE(at + 8);
    const size = is64 ? toSafeNumber(bytes.readBigUInt64BE(at + 16), where) : bytes.readUInt32BE(at + 12);
    need(bytes, offset, size, where, `architecture ${i + 1}`);
    if (offset < tableBytes) {
      throw new IpaError(
        'MACHO_TRUNCATED',
        `Expected architecture ${i + 1} of ${where} to start after the fat header's ${tableBytes} bytes, found it at ${offset}.`,
      );
    }
    slices.push(parseSlice(bytes, offset, size, where));
  }
  return { isFat: true, fatKind: is64 ? 'fat64' : 'fat32', slices };
}

/**
 * One thin slice from its first bytes (mach_header and load commands, at least) and its full size:
 * for signing a file too large to hold, read through a window.
 */
export function parseSliceHead(head: Buffer, sliceSizeBytes: number, where = 'Mach-O file'): MachOSlice {
  return parseSlice(head, 0, sliceSizeBytes, where);
}

function parseSlice(file: Buffer, offset: number, size: number, where: string): MachOSlice {
  const bytes = file.subarray(offset, offset + size);
  need(bytes, 0, 4, where, 'a Mach-O magic number');
  const magic = bytes.readUInt32LE(0);
  const bigEndianMagic = bytes.readUInt32BE(0);
  if (bigEndianMagic === C.MH_MAGIC || bigEndianMagic === C.MH_MAGIC_64) {
    throw new IpaError(
      'MACHO_UNSUPPORTED',
      `Expected ${where} to be a little-endian Mach-O (every iOS target is), found a big-endian one.`,
    );
  }
  if (magic !== C.MH_MAGIC && magic !== C.MH_MAGIC_64) {
    throw new IpaError(
      'MACHO_BAD_MAGIC',
      `Expected ${where} to start with a little-endian Mach-O magic (0xfeedface or 0xfeedfacf), found 0x${magic.toString(16).padStart(8, '0')}.`,
    );
  }
  const is64 = magic === C.MH_MAGIC_64;
  need(bytes, 0, is64 ? 32 : 28, where, 'a mach_header');
  // mach_header: magic, cputype, cpusubtype, filetype, ncmds, sizeofcmds, flags (+ reserved in 64-bit)
  const cpuType = bytes.readInt32LE(4);
  const cpuSubtype = bytes.readUInt32LE(8);
  const fileType = bytes.readUInt32LE(12);
  const commandCount = bytes.readUInt32LE(16);
  const commandsSizeBytes = bytes.readUInt32LE(20);
  const flags = bytes.readUInt32LE(24);
  const headerSizeBytes = is64 ? 32 : 28;
  need(bytes, headerSizeBytes, commandsSizeBytes, where, 'its load commands');

  const loadCommands: LoadCommand[] = [];
  const segments: Segment[] = [];
  const dylibs: DylibReference[] = [];
  const rpaths: string[] = [];
  let cryptid = 0;
  let encryptionCommandOffset: number | undefined;
  let codeSignature: MachOSlice['codeSignature'];
  let installName: string | undefined;

  let at = headerSizeBytes;
  const end = headerSizeBytes + commandsSizeBytes;
  for (let i = 0; i < commandCount; i++) {
    // load_command: cmd, cmdsize
    if (at + 8 > end) throw truncated(where, `load command ${i + 1} of ${commandCount}`);
    const cmd = bytes.readUInt32LE(at);
    const cmdSize = bytes.readUInt32LE(at + 4);
    if (cmdSize < 8 || at + cmdSize > end) {
      throw new IpaError(
        'MACHO_TRUNCATED',
        `Expected load command ${i + 1} of ${where} to fit in sizeofcmds (${commandsSizeBytes}), found cmdsize ${cmdSize} at offset ${at}.`,
      );
    }
    const command = bytes.subarray(at, at + cmdSize);
    loadCommands.push({ command: cmd, offset: at, size: cmdSize });
    switch (cmd) {
      case C.LC_SEGMENT_64:
      case C.LC_SEGMENT:
        segments.push(readSegment(command, at, cmd === C.LC_SEGMENT_64, where));
        break;
      case C.LC_ENCRYPTION_INFO:
      case C.LC_ENCRYPTION_INFO_64:
        // encryption_info_command: cmd, cmdsize, cryptoff, cryptsize, cryptid
        need(command, 0, 20, where, 'LC_ENCRYPTION_INFO');
        // Every one counts: a later cryptid 0 does not undo an earlier 1.
        if (encryptionCommandOffset === undefined || (cryptid === 0 && command.readUInt32LE(16) !== 0)) {
          cryptid = command.readUInt32LE(16);
          encryptionCommandOffset = at;
        }
        break;
      case C.LC_CODE_SIGNATURE:
        // linkedit_data_command: cmd, cmdsize, dataoff, datasize
        need(command, 0, 16, where, 'LC_CODE_SIGNATURE');
        codeSignature = {
          commandOffset: at,
          dataOffset: command.readUInt32LE(8),
          dataSize: command.readUInt32LE(12),
        };
        break;
      case C.LC_LOAD_DYLIB:
      case C.LC_LOAD_WEAK_DYLIB:
      case C.LC_REEXPORT_DYLIB:
      case C.LC_LAZY_LOAD_DYLIB:
      case C.LC_LOAD_UPWARD_DYLIB:
        // dylib_command: cmd, cmdsize, dylib.name (offset), timestamp, current_version, compatibility_version
        dylibs.push({ command: cmd, commandOffset: at, name: readCommandString(command, 8, 24, where) });
        break;
      case C.LC_ID_DYLIB:
        installName = readCommandString(command, 8, 24, where);
        break;
      case C.LC_RPATH:
        // rpath_command: cmd, cmdsize, path (offset)
        rpaths.push(readCommandString(command, 8, 12, where));
        break;
      default:
        break;
    }
    at += cmdSize;
  }
  // Load commands are edited in place (a command appended at sizeofcmds), so the header must agree.
  if (at !== end) {
    throw new IpaError(
      'MACHO_TRUNCATED',
      `Expected the ${commandCount} load commands of ${where} to fill sizeofcmds (${commandsSizeBytes} bytes), found ${at - headerSizeBytes} bytes of commands.`,
    );
  }

  const firstData = Math.min(
    size,
    ...segments.filter((s) => s.firstSectionOffset !== undefined).map((s) => s.firstSectionOffset!),
  );
  return {
    offset,
    size,
    arch: archName(cpuType, cpuSubtype),
    cpuType,
    cpuSubtype,
    is64,
    fileType,
    flags,
    commandCount,
    commandsSizeBytes,
    headerSizeBytes,
    loadCommands,
    segments,
    cryptid,
    ...(encryptionCommandOffset === undefined ? {} : { encryptionCommandOffset }),
    ...(codeSignature === undefined ? {} : { codeSignature }),
    dylibs,
    rpaths,
    ...(installName === undefined ? {} : { installName }),
    freeCommandBytes: Math.max(0, firstData - end),
  };
}
