/** Sequential reads of the source archive for the zip writer's raw copies. */
import type { FileHandle } from 'node:fs/promises';
import { IpaError } from '../errors.js';

export const READ_BLOCK_BYTES = 1024 * 1024;

/**
 * Reads ranges of the source through 1 MiB blocks on a fixed grid, since copied entries are mostly
 * in order; the next block is read ahead while the current one is used.
 */
export function createBlockReader(handle: FileHandle): { read(offset: number, length: number): Promise<Buffer> } {
  const blocks = new Map<number, Promise<Buffer>>();
  // A returned range is used before the next read, so a block's buffer is free once it is evicted.
  const spare: Buffer[] = [];
  const blockAt = (index: number): Promise<Buffer> => {
    let data = blocks.get(index);
    if (data === undefined) {
      data = readUpTo(handle, index * READ_BLOCK_BYTES, READ_BLOCK_BYTES, spare.pop());
      data.catch(() => undefined); // a read-ahead nobody uses must not become an unhandled rejection
      blocks.set(index, data);
    }
    return data;
  };
  const use = async (index: number): Promise<Buffer> => {
    const data = await blockAt(index);
    // Keep this block and the one read ahead; forget the rest.
    for (const [key, old] of blocks) {
      if (key >= index) continue;
      blocks.delete(key);
      void old.then((buffer) => {
        if (buffer.buffer.byteLength === READ_BLOCK_BYTES && spare.length < 2) spare.push(Buffer.from(buffer.buffer, buffer.byteOffset, READ_BLOCK_BYTES));
      }, () => undefined);
    }
    if (data.length === READ_BLOCK_BYTES) void blockAt(index + 1);
    return data;
  };
  return {
    async read(offset, length) {
      const first = Math.floor(offset / READ_BLOCK_BYTES);
      const last = Math.floor((offset + length - 1) / READ_BLOCK_BYTES);
      if (length === 0) return Buffer.alloc(0);
      if (last - first > 1) return readExactly(handle, offset, length);
      const parts: Buffer[] = [];
      for (let index = first; index <= last; index++) {
        const data = await use(index);
        const from = Math.max(offset, index * READ_BLOCK_BYTES) - index * READ_BLOCK_BYTES;
        const to = Math.min(offset + length, (index + 1) * READ_BLOCK_BYTES) - index * READ_BLOCK_BYTES;
        if (data.length < to) {
          throw new IpaError('ZIP_TRUNCATED', `Expected ${length} bytes at offset ${offset} of the source archive, found the file ends first.`);
        }
        parts.push(data.subarray(from, to));
      }
      return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
    },
  };
}

/** Splits [start, end) at the block grid, so each piece is served from one block without copying. */
export function* gridChunks(start: number, end: number): Generator<[number, number]> {
  for (let at = start; at < end; ) {
    const next = Math.min(end, (Math.floor(at / READ_BLOCK_BYTES) + 1) * READ_BLOCK_BYTES);
    yield [at, next - at];
    at = next;
  }
}

async function readUpTo(handle: FileHandle, offset: number, length: number, into?: Buffer): Promise<Buffer> {
  const buffer = into !== undefined && into.length >= length ? into : Buffer.allocUnsafe(length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await handle.read(buffer, done, length - done, offset + done);
    if (bytesRead === 0) break;
    done += bytesRead;
  }
  return buffer.subarray(0, done);
}

async function readExactly(handle: FileHandle, offset: number, length: number): Promise<Buffer> {
  const bytes = await readUpTo(handle, offset, length);
  if (bytes.length < length) throw new IpaError('ZIP_TRUNCATED', `Expected ${length} bytes at offset ${offset} of the source archive, found ${bytes.length}.`);
  return bytes;
}

