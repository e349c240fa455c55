/**
 * Mach-O reading: fat and thin files, every slice, the load commands signing and checking need.
 * Offsets are from <mach-o/loader.h> and <mach-o/fat.h>; every length is checked before use.
 */
import { IpaError } from '../errors.js';
import * as C from './constants.js';
import { archName } from './arch.js';

export interface Segment {
  readonly name: string;
  /** Offset of the segment command, from the slice start. */
  readonly commandOffset: number;
  readonly vmAddress: bigint;
  readonly vmSize: bigint;
  readonly fileOffset: number;
  readonly fileSize: number;
  /** Lowest file offset of a non-empty section in this segment, if any. */
  readonly firstSectionOffset?: number;
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
  readonly commandCount: number;
  readonly commandsSizeBytes: number;
  /** 28 for mach_header, 32 for mach_header_64. */
  readonly headerSizeBytes: number;
  readonly segments: readonly Segment[];
  /** cryptid of LC_ENCRYPTION_INFO(_64); 0 when there is no such command. */
  readonly cryptid: number;
  readonly encryptionCommandOffset?: number;
  readonly codeSignature?: { readonly commandOffset: number; readonly dataOffset: number; readonly dataSize: number };
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
// Java class files share 0xcafebabe; their "count" (the version) is 45 or more.
const MAX_FAT_ARCHS = 32;

/** True when the first bytes are a thin little-endian or a fat Mach-O header. */
export function isMachOHead(head: Buffer): boolean {
  if (head.length < 8) return false;
  const le = head.readUInt32LE(0);
  if (le === C.MH_MAGIC || le === C.MH_MAGIC_64) return true;
  const be = head.readUInt32BE(0);
  if (be === C.FAT_MAGIC || be === C.FAT_MAGIC_64) {
    const count = head.readUInt32BE(4);
    return count > 0 && count <= MAX_FAT_ARCHS;
  }
  return false;
}

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
  if (count === 0 || count > MAX_FAT_ARCHS) {
    throw new IpaError('MACHO_BAD_MAGIC', `Expected ${where} to list 1 to ${MAX_FAT_ARCHS} architectures, found ${count}.`);
  }
  const entryBytes = is64 ? FAT_ARCH_64_BYTES : FAT_ARCH_BYTES;
  need(bytes, FAT_HEADER_BYTES, count * entryBytes, where, 'the fat architecture table');
  const slices: MachOSlice[] = [];
  for (let i = 0; i < count; i++) {
    const at = FAT_HEADER_BYTES + i * entryBytes;
    // fat_arch: cputype, cpusubtype, offset, size, align; fat_arch_64: same with 64-bit offset and size
    const offset = is64 ? toSafeNumber(bytes.readBigUInt64BE(at + 8), where) : bytes.readUInt32BE(at + 8);
    const size = is64 ? toSafeNumber(bytes.readBigUInt64BE(at + 16), where) : bytes.readUInt32BE(at + 12);
    need(bytes, offset, size, where, `architecture ${i + 1}`);
    slices.push(parseSlice(bytes, offset, size, where));
  }
  return { isFat: true, fatKind: is64 ? 'fat64' : 'fat32', slices };
}

function parseSlice(file: Buffer, offset: number, size: number, where: string): MachOSlice {
  const bytes = file.subarray(offset, offset + size);
  need(bytes, 0, 4, where, 'a Mach-O magic number');
  const magic = bytes.readUInt32LE(0);
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
  const headerSizeBytes = is64 ? 32 : 28;
  need(bytes, headerSizeBytes, commandsSizeBytes, where, 'its load commands');

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
    switch (cmd) {
      case C.LC_SEGMENT_64:
      case C.LC_SEGMENT:
        segments.push(readSegment(command, at, cmd === C.LC_SEGMENT_64, where));
        break;
      case C.LC_ENCRYPTION_INFO:
      case C.LC_ENCRYPTION_INFO_64:
        // encryption_info_command: cmd, cmdsize, cryptoff, cryptsize, cryptid
        need(command, 0, 20, where, 'LC_ENCRYPTION_INFO');
        cryptid = command.readUInt32LE(16);
        encryptionCommandOffset = at;
        break;
      case C.LC_CODE_SIGNATURE:
        // linkedit_data_command: cmd, cmdsize, dataoff, datasize
        need(command, 0, 16, where, 'LC_CODE_SIGNATURE');
        codeSignature = { commandOffset: at, dataOffset: command.readUInt32LE(8), dataSize: command.readUInt32LE(12) };
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
    commandCount,
    commandsSizeBytes,
    headerSizeBytes,
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

function readSegment(command: Buffer, commandOffset: number, is64: boolean, where: string): Segment {
  // segment_command_64: cmd, cmdsize, segname[16], vmaddr, vmsize, fileoff, filesize (u64 each),
  //   maxprot, initprot, nsects, flags; then nsects section_64 of 80 bytes.
  // segment_command: the same with u32 addresses and sizes (56 bytes); section of 68 bytes.
  const headerBytes = is64 ? 72 : 56;
  need(command, 0, headerBytes, where, 'a segment command');
  const name = readFixedString(command, 8, 16);
  const vmAddress = is64 ? command.readBigUInt64LE(24) : BigInt(command.readUInt32LE(24));
  const vmSize = is64 ? command.readBigUInt64LE(32) : BigInt(command.readUInt32LE(28));
  const fileOffset = is64 ? toSafeNumber(command.readBigUInt64LE(40), where) : command.readUInt32LE(32);
  const fileSize = is64 ? toSafeNumber(command.readBigUInt64LE(48), where) : command.readUInt32LE(36);
  const sectionCount = command.readUInt32LE(is64 ? 64 : 48);
  const sectionBytes = is64 ? 80 : 68;
  need(command, headerBytes, sectionCount * sectionBytes, where, `the sections of ${name}`);
  let firstSectionOffset: number | undefined;
  for (let i = 0; i < sectionCount; i++) {
    const s = headerBytes + i * sectionBytes;
    // section_64: sectname[16], segname[16], addr u64, size u64, offset u32 (at 48), align, ..., flags (at 64)
    // section: sectname[16], segname[16], addr u32, size u32, offset u32 (at 40), ...
    const sectionSize = is64 ? command.readBigUInt64LE(s + 40) : BigInt(command.readUInt32LE(s + 36));
    const sectionOffset = command.readUInt32LE(s + (is64 ? 48 : 40));
    const flags = command.readUInt32LE(s + (is64 ? 64 : 56));
    // Zero-fill sections (S_ZEROFILL 0x1, S_GB_ZEROFILL 0xc, S_THREAD_LOCAL_ZEROFILL 0x12) have no file data.
    const type = flags & 0xff;
    const isZeroFill = type === 0x1 || type === 0xc || type === 0x12;
    if (sectionSize > 0n && sectionOffset > 0 && !isZeroFill) {
      firstSectionOffset = Math.min(firstSectionOffset ?? sectionOffset, sectionOffset);
    }
  }
  return {
    name,
    commandOffset,
    vmAddress,
    vmSize,
    fileOffset,
    fileSize,
    ...(firstSectionOffset === undefined ? {} : { firstSectionOffset }),
  };
}

/** An lc_str: a string at `offset` from the command start, NUL-terminated within cmdsize. */
function readCommandString(command: Buffer, fieldAt: number, minSize: number, where: string): string {
  need(command, 0, minSize, where, 'a load command string');
  const offset = command.readUInt32LE(fieldAt);
  if (offset < minSize || offset >= command.length) {
    throw new IpaError('MACHO_TRUNCATED', `Expected a string inside a ${command.length}-byte load command of ${where}, found offset ${offset}.`);
  }
  const nul = command.indexOf(0, offset);
  return command.toString('utf8', offset, nul === -1 ? command.length : nul);
}

function readFixedString(bytes: Buffer, at: number, length: number): string {
  const raw = bytes.subarray(at, at + length);
  const nul = raw.indexOf(0);
  return raw.toString('latin1', 0, nul === -1 ? length : nul);
}

export function need(bytes: Buffer, at: number, length: number, where: string, what: string): void {
  if (at < 0 || length < 0 || at + length > bytes.length) throw truncated(where, what, at + length, bytes.length);
}

function truncated(where: string, what: string, needed?: number, found?: number): IpaError {
  const sizes = needed === undefined ? '' : ` (needs ${needed} bytes, found ${found})`;
  return new IpaError('MACHO_TRUNCATED', `Expected ${where} to hold ${what}, found it cut short${sizes}.`);
}

function toSafeNumber(value: bigint, where: string): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new IpaError('MACHO_TRUNCATED', `Expected offsets in ${where} to fit the file, found ${value}.`);
  }
  return Number(value);
}
