/** Rewrites every slice of a thin or fat Mach-O and lays a fat file out again around the new sizes. */
import { layOutFat, parseMachO, type MachOSlice } from './parse.js';

export type SliceTransform = (sliceBytes: Buffer, slice: MachOSlice) => Buffer;

export function rebuildMachO(bytes: Buffer, where: string, transform: SliceTransform): Buffer {
  const file = parseMachO(bytes, where);
  if (!file.isFat) return transform(bytes, file.slices[0]!);
  const header = Buffer.from(bytes.subarray(0, file.fatTableBytes!));
  const slices = file.slices.map((slice) =>
    transform(bytes.subarray(slice.offset, slice.offset + slice.size), slice),
  );
  const offsets = layOutFat(
    header,
    file,
    slices.map((slice) => slice.length),
    where,
  );
  const parts: Buffer[] = [header];
  let previousEnd = header.length;
  slices.forEach((slice, i) => {
    parts.push(Buffer.alloc(offsets[i]! - previousEnd), slice);
    previousEnd = offsets[i]! + slice.length;
  });
  return Buffer.concat(parts);
}
