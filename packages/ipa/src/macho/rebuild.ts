/** Rewrites every slice of a thin or fat Mach-O and lays a fat file out again around the new sizes. */
import { FAT_MAGIC_64 } from './constants.js';
import { parseMachO, type MachOSlice } from './parse.js';

export type SliceTransform = (sliceBytes: Buffer, slice: MachOSlice) => Buffer;

export function rebuildMachO(bytes: Buffer, where: string, transform: SliceTransform): Buffer {
  const file = parseMachO(bytes, where);
  if (!file.isFat) return transform(bytes, file.slices[0]!);
  const is64 = bytes.readUInt32BE(0) === FAT_MAGIC_64;
  const entryBytes = is64 ? 32 : 20;
  const headerBytes = 8 + file.slices.length * entryBytes;
  const header = Buffer.from(bytes.subarray(0, headerBytes));
  const parts: Buffer[] = [];
  let cursor = Math.min(...file.slices.map((s) => s.offset));
  let previousEnd = headerBytes;
  file.slices.forEach((slice, i) => {
    const at = 8 + i * entryBytes;
    // fat_arch: cputype, cpusubtype, offset, size, align (log2); fat_arch_64 has u64 offset and size, align at 24
    const alignment = 2 ** header.readUInt32BE(at + (is64 ? 24 : 16));
    const signed = transform(bytes.subarray(slice.offset, slice.offset + slice.size), slice);
    const offset = Math.ceil(cursor / alignment) * alignment;
    if (is64) {
      header.writeBigUInt64BE(BigInt(offset), at + 8);
      header.writeBigUInt64BE(BigInt(signed.length), at + 16);
    } else {
      header.writeUInt32BE(offset, at + 8);
      header.writeUInt32BE(signed.length, at + 12);
    }
    parts.push(Buffer.alloc(offset - previousEnd), signed);
    previousEnd = offset + signed.length;
    cursor = previousEnd;
  });
  return Buffer.concat([header, ...parts]);
}
