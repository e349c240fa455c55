/**
 * Every slice's architecture and cryptid from a Mach-O as it streams past, keeping only the fat
 * table and each slice's header and load commands: check() reads binaries of any size in a few
 * hundred KiB of memory.
 */
import type { Readable } from 'node:stream';
import { IpaError } from '../errors.js';
import { FAT_MAGIC, FAT_MAGIC_64 } from './constants.js';
import { fatTableBytes, parseSliceHead } from './parse.js';

// A slice's header and load commands; real binaries use a few KiB, lld's -headerpad a few more.
const SLICE_HEAD_BYTES = 256 * 1024;
// fat_header: magic, nfat_arch
const FAT_HEADER_BYTES = 8;

interface Window {
  readonly start: number;
  readonly bytes: Buffer;
  filled: number;
}

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
  const chunks = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let position = 0;
  let pending: Buffer = Buffer.alloc(0);
  const fill = async (window: Window): Promise<void> => {
    while (window.filled < window.bytes.length) {
      if (pending.length === 0) {
        const next = await chunks.next();
        if (next.done)
          throw new IpaError(
            'MACHO_TRUNCATED',
            `Expected ${where} to hold ${sizeBytes} bytes, found it ends at ${position}.`,
          );
        pending = next.value;
      }
      const end = position + pending.length;
      if (end <= window.start + window.filled) {
        position = end; // all before the window: skip
        pending = Buffer.alloc(0);
        continue;
      }
      const from = window.start + window.filled - position;
      const take = Math.min(pending.length - from, window.bytes.length - window.filled);
      pending.copy(window.bytes, window.filled, from, from + take);
      window.filled += take;
      position += from + take;
      pending = pending.subarray(from + take);
    }
  };
  try {
    const head: Window = { start: 0, bytes: Buffer.alloc(Math.min(sizeBytes, FAT_HEADER_BYTES)), filled: 0 };
    await fill(head);
    if (head.bytes.length < FAT_HEADER_BYTES)
      throw new IpaError(
        'MACHO_TRUNCATED',
        `Expected ${where} to hold a Mach-O header, found ${sizeBytes} bytes.`,
      );
    const magic = head.bytes.readUInt32BE(0);
    if (magic !== FAT_MAGIC && magic !== FAT_MAGIC_64) {
      const thin: Window = {
        start: 0,
        bytes: Buffer.alloc(Math.min(sizeBytes, SLICE_HEAD_BYTES)),
        filled: 0,
      };
      head.bytes.copy(thin.bytes);
      thin.filled = head.bytes.length;
      await fill(thin);
      return [describe(thin.bytes, sizeBytes, where)];
    }
    // fat_header: magic, nfat_arch; then fat_arch (20 bytes) or fat_arch_64 (32 bytes), big-endian
    const is64 = magic === FAT_MAGIC_64;
    const count = head.bytes.readUInt32BE(4);
    const entryBytes = is64 ? 32 : 20;
    const tableBytes = fatTableBytes(count, is64, where);
    if (tableBytes > sizeBytes)
      throw new IpaError(
        'MACHO_TRUNCATED',
        `Expected ${where} to hold its fat architecture table of ${tableBytes} bytes, found ${sizeBytes} bytes.`,
      );
    const table: Window = { start: 0, bytes: Buffer.alloc(tableBytes), filled: 0 };
    head.bytes.copy(table.bytes);
    table.filled = head.bytes.length;
    await fill(table);
    const slices = Array.from({ length: count }, (_, i) => {
      const at = 8 + i * entryBytes;
      const offset = Number(
        is64 ? table.bytes.readBigUInt64BE(at + 8) : BigInt(table.bytes.readUInt32BE(at + 8)),
      );
      const size = Number(
        is64 ? table.bytes.readBigUInt64BE(at + 16) : BigInt(table.bytes.readUInt32BE(at + 12)),
      );
      if (offset < tableBytes || offset + size > sizeBytes) {
        throw new IpaError(
          'MACHO_TRUNCATED',
          `Expected architecture ${i + 1} of ${where} to lie within its ${sizeBytes} bytes, found ${offset}+${size}.`,
        );
      }
      return { index: i, offset, size };
    });
    // The stream only goes forward: visit the slices in file order, report them in table order.
    const results: StreamedSlice[] = new Array(count);
    for (const slice of [...slices].sort((a, b) => a.offset - b.offset)) {
      const window: Window = {
        start: slice.offset,
        bytes: Buffer.alloc(Math.min(slice.size, SLICE_HEAD_BYTES)),
        filled: 0,
      };
      if (slice.offset < position)
        throw new IpaError(
          'MACHO_TRUNCATED',
          `Expected the slices of ${where} not to overlap, found one at ${slice.offset}.`,
        );
      await fill(window);
      results[slice.index] = describe(window.bytes, slice.size, where);
    }
    return results;
  } finally {
    stream.destroy();
  }
}

function describe(head: Buffer, sliceSizeBytes: number, where: string): StreamedSlice {
  const slice = parseSliceHead(head, sliceSizeBytes, where);
  return { arch: slice.arch, cryptid: slice.cryptid };
}
