/**
 * Mach-O reading: fat and thin files, every slice, the load commands signing and checking need.
 * The one parser of fat headers, slices and load commands: parseMachO runs it over a Buffer,
 * readMachO through a ByteReader (a spooled binary, an entry as it inflates), and the signers, the
 * signature readers and check() all take what it answers. Offsets are from <mach-o/loader.h> and
 * <mach-o/fat.h>; every range is checked against the file before it is read.
 */
import { IpaError } from '../errors.js';
import * as C from './constants.js';
import { archName } from './arch.js';
import { need, needWithin, readCommandString, truncated } from './bytes.js';
import { isMachO } from './magic.js';
import { runOnBuffer, runOnReader, type ByteReader, type Parse } from './reader.js';
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
  /** The command's cmdsize, and its dylib.name.offset: the name lies from there to cmdsize. */
  readonly commandSize: number;
  readonly nameOffset: number;
  readonly name: string;
}

export interface MachOSlice {
  /** Where the slice starts in the file (0 for a thin file) and its length. */
  readonly offset: number;
  readonly size: number;
  /** For a slice of a fat file: its fat_arch.align, a power of two (14: 16 KiB). */
  readonly alignLog2?: number;
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
  /**
   * The platform and minimum OS the slice was built for (LC_BUILD_VERSION, or an older
   * LC_VERSION_MIN_*), the version as major << 16 | minor << 8 | patch.
   */
  readonly target?: { readonly platform: number; readonly minimumOs: number };
  /** Bytes free between the end of the load commands and the first section's data. */
  readonly freeCommandBytes: number;
}

export interface MachOFile {
  readonly isFat: boolean;
  /** 'fat32' | 'fat64' for fat files. */
  readonly fatKind?: 'fat32' | 'fat64';
  /** For fat files: the bytes of the fat_header and its fat_arch table, which a rebuilt file copies. */
  readonly fatTableBytes?: number;
  /** In the order the fat header lists them. */
  readonly slices: readonly MachOSlice[];
}

export interface MachOReadOptions {
  /**
   * Read each slice's first min(size, this) bytes at once, take its header and load commands from
   * them, and refuse commands that run past them: for a reader that only goes forward (streamReader,
   * as check() reads an entry), which then holds one such window at a time. Real binaries' load
   * commands take a few KiB; lld's -headerpad a few more.
   */
  readonly headWindowBytes?: number;
}

const VERSION_MIN_PLATFORM: Record<number, number> = {
  [C.LC_VERSION_MIN_MACOSX]: C.PLATFORM_MACOS,
  [C.LC_VERSION_MIN_IPHONEOS]: C.PLATFORM_IOS,
  [C.LC_VERSION_MIN_TVOS]: C.PLATFORM_TVOS,
  [C.LC_VERSION_MIN_WATCHOS]: C.PLATFORM_WATCHOS,
};

// fat_header: magic, nfat_arch; then nfat_arch fat_arch (cputype, cpusubtype, offset, size, align:
// 20 bytes) or fat_arch_64 (the same with u64 offset and size, then reserved: 32 bytes), all big-endian.
const FAT_HEADER_BYTES = 8;
const FAT_ARCH_BYTES = 20;
const FAT_ARCH_64_BYTES = 32;
// The kernel reads a fat header's architecture table from the file's first page (16 KiB on iOS).
const MAX_FAT_TABLE_BYTES = 16 * 1024;
// mach_header: magic, cputype, cpusubtype, filetype, ncmds, sizeofcmds, flags (28 bytes); mach_header_64 adds reserved.
const MACH_HEADER_BYTES = 28;
const MACH_HEADER_64_BYTES = 32;

/**
 * The architecture count a fat header may have: at least one, and a table that fits in the first
 * page. A file with fat magic and another count is a damaged Mach-O, to be refused, not skipped.
 */
function fatTableBytes(count: number, is64: boolean, where: string): number {
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

export { isMachO } from './magic.js';

/** The earlier name of isMachO, kept for existing callers. */
export const isMachOHead = isMachO;

/** Parses a whole Mach-O file held in memory. `where` names it in error messages. */
export function parseMachO(bytes: Buffer, where = 'Mach-O file'): MachOFile {
  return runOnBuffer(bytes, machOFile(bytes.length, where));
}

/** The same through a reader: only the fat table and each slice's header and load commands are read. */
export function readMachO(
  reader: ByteReader,
  where = 'Mach-O file',
  options: MachOReadOptions = {},
): Promise<MachOFile> {
  return runOnReader(reader, machOFile(reader.sizeBytes, where, options));
}

/** The parse itself, as steps (reader.ts): for parses that go on to read more of the file. */
export function* machOFile(
  sizeBytes: number,
  where: string,
  options: MachOReadOptions = {},
): Parse<MachOFile> {
  needWithin(sizeBytes, 0, 4, where, 'a Mach-O header');
  const head = yield { offset: 0, length: Math.min(sizeBytes, FAT_HEADER_BYTES) };
  // Fat headers are big-endian, whatever the slices' byte order.
  const magic = head.readUInt32BE(0);
  if (magic !== C.FAT_MAGIC && magic !== C.FAT_MAGIC_64) {
    return { isFat: false, slices: [yield* machOSlice(0, sizeBytes, where, options)] };
  }
  const is64 = magic === C.FAT_MAGIC_64;
  needWithin(sizeBytes, 0, FAT_HEADER_BYTES, where, 'a fat header');
  const count = head.readUInt32BE(4);
  const tableBytes = fatTableBytes(count, is64, where);
  needWithin(sizeBytes, FAT_HEADER_BYTES, tableBytes - FAT_HEADER_BYTES, where, 'the fat architecture table');
  const arches = readFatArches(yield { offset: 0, length: tableBytes }, count, is64, sizeBytes, where);
  // Read in file order, so a reader that only goes forward serves them; listed in table order.
  const slices: MachOSlice[] = new Array<MachOSlice>(count);
  for (const arch of arches) {
    slices[arch.index] = {
      ...(yield* machOSlice(arch.offset, arch.size, where, options)),
      alignLog2: arch.alignLog2,
    };
  }
  return { isFat: true, fatKind: is64 ? 'fat64' : 'fat32', fatTableBytes: tableBytes, slices };
}

interface FatArch {
  readonly index: number;
  readonly offset: number;
  readonly size: number;
  readonly alignLog2: number;
}

/**
 * Every fat_arch of the table, in file order, each checked to lie in the file after the table and
 * apart from the others (the kernel refuses overlapping slices too).
 */
function readFatArches(
  table: Buffer,
  count: number,
  is64: boolean,
  sizeBytes: number,
  where: string,
): FatArch[] {
  const tableBytes = table.length;
  const arches: FatArch[] = [];
  for (let i = 0; i < count; i++) {
    const at = FAT_HEADER_BYTES + i * (is64 ? FAT_ARCH_64_BYTES : FAT_ARCH_BYTES);
    // fat_arch: offset at 8, size at 12, align at 16 (u32); fat_arch_64: offset at 8, size at 16 (u64), align at 24
    const offset = is64 ? table.readBigUInt64BE(at + 8) : BigInt(table.readUInt32BE(at + 8));
    const size = is64 ? table.readBigUInt64BE(at + 16) : BigInt(table.readUInt32BE(at + 12));
    if (offset + size > BigInt(sizeBytes)) {
      throw new IpaError(
        'MACHO_TRUNCATED',
        `Expected architecture ${i + 1} of ${where} to lie within its ${sizeBytes} bytes, found ${offset}+${size}.`,
      );
    }
    if (offset < BigInt(tableBytes)) {
      throw new IpaError(
        'MACHO_TRUNCATED',
        `Expected architecture ${i + 1} of ${where} to start after the fat header's ${tableBytes} bytes, found it at ${offset}.`,
      );
    }
    arches.push({
      index: i,
      offset: Number(offset),
      size: Number(size),
      alignLog2: table.readUInt32BE(at + (is64 ? 24 : 16)),
    });
  }
  arches.sort((a, b) => a.offset - b.offset);
  for (let i = 1; i < arches.length; i++) {
    const before = arches[i - 1]!;
    if (arches[i]!.offset < before.offset + before.size) {
      throw new IpaError(
        'MACHO_TRUNCATED',
        `Expected the slices of ${where} not to overlap, found one at ${arches[i]!.offset}.`,
      );
    }
  }
  return arches;
}

// lipo aligns slices to at most 2^15 bytes (MAXSECTALIGN); a larger alignment would only pad the output.
const MAX_FAT_ALIGN_LOG2 = 15;

/**
 * Where the slices of a fat file go once each has a new size (signing, injection): in table order
 * from the first one's offset, each at its fat_arch alignment. Writes the new offsets and sizes
 * into `header`, a copy of the file's fat_header and table, and answers the offsets.
 */
export function layOutFat(
  header: Buffer,
  file: MachOFile,
  sizes: readonly number[],
  where: string,
): number[] {
  const is64 = file.fatKind === 'fat64';
  let cursor = Math.min(...file.slices.map((slice) => slice.offset));
  return file.slices.map((slice, i) => {
    const at = FAT_HEADER_BYTES + i * (is64 ? FAT_ARCH_64_BYTES : FAT_ARCH_BYTES);
    const alignLog2 = slice.alignLog2!;
    if (alignLog2 > MAX_FAT_ALIGN_LOG2) {
      throw new IpaError(
        'MACHO_UNSUPPORTED',
        `Expected architecture ${i + 1} of ${where} to be aligned to at most 2^${MAX_FAT_ALIGN_LOG2} bytes, as lipo aligns them, found 2^${alignLog2}.`,
      );
    }
    const offset = Math.ceil(cursor / 2 ** alignLog2) * 2 ** alignLog2;
    const size = sizes[i]!;
    // fat_arch: offset at 8, size at 12 (u32); fat_arch_64: offset at 8, size at 16 (u64)
    if (is64) {
      header.writeBigUInt64BE(BigInt(offset), at + 8);
      header.writeBigUInt64BE(BigInt(size), at + 16);
    } else {
      header.writeUInt32BE(offset, at + 8);
      header.writeUInt32BE(size, at + 12);
    }
    cursor = offset + size;
    return offset;
  });
}

/** One thin slice of `size` bytes at `offset` of the file: its header, then its load commands. */
function* machOSlice(
  offset: number,
  size: number,
  where: string,
  options: MachOReadOptions,
): Parse<MachOSlice> {
  needWithin(size, 0, 4, where, 'a Mach-O magic number');
  let window: Buffer | undefined;
  if (options.headWindowBytes !== undefined)
    window = yield { offset, length: Math.min(size, options.headWindowBytes) };
  const header = window ?? (yield { offset, length: Math.min(size, MACH_HEADER_64_BYTES) });
  const magic = header.readUInt32LE(0);
  const bigEndianMagic = header.readUInt32BE(0);
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
  const headerSizeBytes = is64 ? MACH_HEADER_64_BYTES : MACH_HEADER_BYTES;
  needWithin(size, 0, headerSizeBytes, where, 'a mach_header');
  // mach_header: sizeofcmds at 20
  const commandsSizeBytes = header.readUInt32LE(20);
  needWithin(window?.length ?? size, headerSizeBytes, commandsSizeBytes, where, 'its load commands');
  const commands =
    window?.subarray(0, headerSizeBytes + commandsSizeBytes) ??
    (yield { offset, length: headerSizeBytes + commandsSizeBytes });
  return readLoadCommands(commands, offset, size, is64, where);
}

/** A slice from its header and load commands (`bytes`, from the slice's start) and its full size. */
function readLoadCommands(
  bytes: Buffer,
  offset: number,
  size: number,
  is64: boolean,
  where: string,
): MachOSlice {
  // mach_header: magic, cputype, cpusubtype, filetype, ncmds (16), sizeofcmds (20), flags (+ reserved in 64-bit)
  const commandCount = bytes.readUInt32LE(16);
  const commandsSizeBytes = bytes.readUInt32LE(20);
  const headerSizeBytes = is64 ? MACH_HEADER_64_BYTES : MACH_HEADER_BYTES;
  need(bytes, headerSizeBytes, commandsSizeBytes, where, 'its load commands');

  const loadCommands: LoadCommand[] = [];
  const segments: Segment[] = [];
  const dylibs: DylibReference[] = [];
  const rpaths: string[] = [];
  let cryptid = 0;
  let encryptionCommandOffset: number | undefined;
  let codeSignature: MachOSlice['codeSignature'];
  let installName: string | undefined;
  let target: MachOSlice['target'];

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
        // dylib_command: cmd, cmdsize, dylib.name (offset, at 8), timestamp, current_version, compatibility_version
        dylibs.push({
          command: cmd,
          commandOffset: at,
          commandSize: cmdSize,
          name: readCommandString(command, 8, 24, where),
          nameOffset: command.readUInt32LE(8),
        });
        break;
      case C.LC_ID_DYLIB:
        installName = readCommandString(command, 8, 24, where);
        break;
      case C.LC_RPATH:
        // rpath_command: cmd, cmdsize, path (offset)
        rpaths.push(readCommandString(command, 8, 12, where));
        break;
      case C.LC_BUILD_VERSION:
        // build_version_command: cmd, cmdsize, platform, minos, sdk, ntools
        need(command, 0, 16, where, 'LC_BUILD_VERSION');
        target ??= { platform: command.readUInt32LE(8), minimumOs: command.readUInt32LE(12) };
        break;
      case C.LC_VERSION_MIN_MACOSX:
      case C.LC_VERSION_MIN_IPHONEOS:
      case C.LC_VERSION_MIN_TVOS:
      case C.LC_VERSION_MIN_WATCHOS:
        // version_min_command: cmd, cmdsize, version, sdk
        need(command, 0, 12, where, 'LC_VERSION_MIN');
        target ??= { platform: VERSION_MIN_PLATFORM[cmd]!, minimumOs: command.readUInt32LE(8) };
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
  // mach_header: cputype at 4, cpusubtype at 8, filetype at 12, flags at 24
  const cpuType = bytes.readInt32LE(4);
  const cpuSubtype = bytes.readUInt32LE(8);
  return {
    offset,
    size,
    arch: archName(cpuType, cpuSubtype),
    cpuType,
    cpuSubtype,
    is64,
    fileType: bytes.readUInt32LE(12),
    flags: bytes.readUInt32LE(24),
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
    ...(target === undefined ? {} : { target }),
    ...(installName === undefined ? {} : { installName }),
    freeCommandBytes: Math.max(0, firstData - end),
  };
}
