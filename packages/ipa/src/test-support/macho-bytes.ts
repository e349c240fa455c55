/**
 * Independent of src/macho on purpose: tests locate LC_ENCRYPTION_INFO_64 themselves so a bug in
 * the parser cannot hide in both the fixture and the code under test.
 * mach_header_64 is 32 bytes, little-endian on arm64: magic, cputype, cpusubtype, filetype,
 * ncmds (offset 16), sizeofcmds, flags, reserved. Each load command starts with cmd, cmdsize.
 */
const MH_MAGIC_64 = 0xfeedfacf;
const LC_ENCRYPTION_INFO_64 = 0x2c;

/** Offset of the cryptid field of the first LC_ENCRYPTION_INFO_64, or undefined. */
export function findCryptidOffset(macho: Buffer): number | undefined {
  if (macho.readUInt32LE(0) !== MH_MAGIC_64)
    throw new Error('test expects a thin 64-bit little-endian Mach-O');
  const commandCount = macho.readUInt32LE(16);
  let offset = 32;
  for (let i = 0; i < commandCount; i++) {
    const cmd = macho.readUInt32LE(offset);
    const size = macho.readUInt32LE(offset + 4);
    // encryption_info_command_64: cmd, cmdsize, cryptoff, cryptsize, cryptid, pad
    if (cmd === LC_ENCRYPTION_INFO_64) return offset + 16;
    offset += size;
  }
  return undefined;
}

export function withCryptid(macho: Buffer, cryptid: number): Buffer {
  const at = findCryptidOffset(macho);
  if (at === undefined) throw new Error('fixture has no LC_ENCRYPTION_INFO_64');
  const copy = Buffer.from(macho);
  copy.writeUInt32LE(cryptid, at);
  return copy;
}

/** A copy whose mach_header cpusubtype (offset 8) says arm64e, so lipo accepts it beside arm64. */
export function asArm64e(macho: Buffer): Buffer {
  const copy = Buffer.from(macho);
  copy.writeUInt32LE(0x80000002, 8); // CPU_SUBTYPE_ARM64E with the PTRAUTH_ABI capability bit
  return copy;
}

/**
 * A copy with one more LC_ENCRYPTION_INFO_64 after the load commands (a copy of the first, saying
 * `cryptid`): ncmds and sizeofcmds (offsets 16 and 20) grow to cover it. The header padding after
 * the load commands must have room for it.
 */
export function withExtraEncryptionCommand(macho: Buffer, cryptid: number): Buffer {
  const at = findCryptidOffset(macho);
  if (at === undefined) throw new Error('fixture has no LC_ENCRYPTION_INFO_64');
  const command = macho.subarray(at - 16, at - 16 + macho.readUInt32LE(at - 12));
  const end = 32 + macho.readUInt32LE(20);
  if (!macho.subarray(end, end + command.length).equals(Buffer.alloc(command.length)))
    throw new Error('no room after the load commands');
  const copy = Buffer.from(macho);
  command.copy(copy, end);
  copy.writeUInt32LE(cryptid, end + 16);
  copy.writeUInt32LE(copy.readUInt32LE(16) + 1, 16);
  copy.writeUInt32LE(copy.readUInt32LE(20) + command.length, 20);
  return copy;
}
