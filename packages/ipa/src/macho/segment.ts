/** Segment load commands (LC_SEGMENT, LC_SEGMENT_64) and their sections, from <mach-o/loader.h>. */
import { need, readFixedString, toSafeNumber } from './bytes.js';

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

export function readSegment(command: Buffer, commandOffset: number, is64: boolean, where: string): Segment {
  // segment_command_64: cmd, cmdsize, segname[16] (8), vmaddr (24), vmsize (32), fileoff (40), filesize (48)
  //   (u64 each), maxprot, initprot, nsects (64), flags; then nsects section_64 of 80 bytes.
  // segment_command: the same with u32 addresses and sizes: vmaddr 24, vmsize 28, fileoff 32,
  //   filesize 36, nsects 48 (56 bytes); then sections of 68 bytes.
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
    // section_64: sectname[16], segname[16], addr u64 (32), size u64 (40), offset u32 (48), align,
    //   reloff, nreloc, flags (64). section: addr u32 (32), size u32 (36), offset (40), ..., flags (56).
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
