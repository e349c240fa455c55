/**
 * Every slice's architecture and cryptid from a Mach-O as it streams past, keeping only the fat
 * table and each slice's header and load commands: check() reads binaries of any size in a few
 * hundred KiB of memory.
 */
import type { Readable } from 'node:stream';
import { readMachO } from './parse.js';
import { streamReader } from './reader.js';

// Each slice's first bytes, read as one window: its header and load commands must lie in them (real
// binaries' take a few KiB, lld's -headerpad a few more), and a stream that ends inside them shows.
const SLICE_HEAD_BYTES = 256 * 1024;

export interface StreamedSlice {
  readonly arch: string;
  readonly cryptid: number;
}

/** Reads the slices of a Mach-O of `sizeBytes` from `stream`, which it consumes (and then destroys). */
export async function readSlicesFromStream(
  stream: Readable,
  sizeBytes: number,
  where: string,
): Promise<StreamedSlice[]> {
  try {
    const file = await readMachO(streamReader(stream, sizeBytes, where), where, {
      headWindowBytes: SLICE_HEAD_BYTES,
    });
    return file.slices.map(({ arch, cryptid }) => ({ arch, cryptid }));
  } finally {
    stream.destroy();
  }
}
