/** Sequential reads of the source archive for the zip writer's raw copies. */
import type { FileHandle } from 'node:fs/promises';
import { IpaError } from '../errors.js';
import { discard } from './discard.js';

export const READ_BLOCK_BYTES = 1024 * 1024;

/**
 * Reads ranges of the source through 1 MiB blocks on a fixed grid, since copied entries are mostly
 * in order; the next block is read ahead while the current one is used.
 */
export function createBlockReader(handle: FileHandle): {
  read(offset: number, length: number): Promise<Buffer>;
} {
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
      void old.then(
        (buffer) => {
          if (buffer.buffer.byteLength === READ_BLOCK_BYTES && spare.length < 2)
            spare.push(Buffer.from(buffer.buffer, buffer.byteOffset, READ_BLOCK_BYTES));
        },
        () => undefined,
      );
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
          throw new IpaError(
            'ZIP_TRUNCATED',
            `Expected ${length} bytes at offset ${offset} of the source archive, found the file ends first.`,
          );
        }
        parts.push(data.subarray(from, to));
      }
      return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
    },
  };
}

/** Splits [start, end) at the block grid, so each piece is served from one block without copying. */
export function* gridChunks(start: number, end: number): Generator<[number, number]> {
  for (let at = start; at < end;) {
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
  if (bytes.length < length)
    throw new IpaError(
      'ZIP_TRUNCATED',
      `Expected ${length} bytes at offset ${offset} of the source archive, found ${bytes.length}.`,
    );
  return bytes;
}

/** A range of the source inside one block, valid until `release` (the block's buffer is then reused). */
export interface HeldBytes {
  readonly bytes: Buffer;
  release(): void;
}

export interface BlockWindow {
  /** The block size: ranges passed to `hold` must not cross a multiple of it. */
  readonly blockBytes: number;
  /**
   * Bytes of the source inside one block, held until released. Moving to another block lets go
   * of the last one (the window's own hold; ranges still held keep it), so waiting here while
   * holding ranges of blocks behind can run out of buffers: release or hand them on first.
   */
  hold(offset: number, length: number): Promise<HeldBytes>;
  /** Lets go of every block (ranges still held keep theirs until released). */
  close(): void;
}

interface WindowBlock {
  readonly index: number;
  readonly buffer: Buffer;
  readonly data: Promise<Buffer>;
  holds: number;
}

/**
 * Reads the source through a few large blocks that the bytes are used from in place: a range
 * stays valid while held (say, until a write of it completes), so a copy needs no second buffer.
 * The block after the one in use is read ahead when a buffer is free.
 */
export function createBlockWindow(handle: FileHandle, blockBytes: number, maxBlocks: number): BlockWindow {
  const free: Buffer[] = [];
  const waiting: Array<() => void> = [];
  let allocated = 0;
  let current: WindowBlock | undefined;
  let ahead: WindowBlock | undefined;

  let closed = false;
  const giveBack = (block: WindowBlock): void => {
    if (--block.holds > 0) return;
    if (closed) {
      // Once its read is over: the kernel may still be filling a block read ahead.
      void block.data.then(
        () => discard(block.buffer),
        () => discard(block.buffer),
      );
      return;
    }
    free.push(block.buffer);
    waiting.shift()?.();
  };
  const freeBuffer = (): Buffer | undefined => {
    const buffer = free.pop();
    if (buffer !== undefined || allocated >= maxBlocks) return buffer;
    allocated++;
    return Buffer.allocUnsafe(blockBytes);
  };
  const load = (index: number, buffer: Buffer): WindowBlock => {
    const data = readUpTo(handle, index * blockBytes, blockBytes, buffer);
    data.catch(() => undefined); // a read-ahead nobody uses must not become an unhandled rejection
    return { index, buffer, data, holds: 1 };
  };
  const blockAt = async (index: number): Promise<WindowBlock> => {
    if (current?.index === index) return current;
    if (current !== undefined) giveBack(current);
    current = undefined;
    if (ahead?.index === index) {
      current = ahead;
      ahead = undefined;
    } else {
      if (ahead !== undefined) giveBack(ahead);
      ahead = undefined;
      let buffer = freeBuffer();
      while (buffer === undefined) {
        await new Promise<void>((resolve) => waiting.push(resolve));
        buffer = freeBuffer();
      }
      current = load(index, buffer);
    }
    if (ahead === undefined) {
      // Past the end of the file, a read-ahead finds nothing, at the cost of one call.
      const buffer = freeBuffer();
      if (buffer !== undefined) ahead = load(index + 1, buffer);
    }
    return current;
  };

  return {
    blockBytes,
    async hold(offset, length) {
      const index = Math.floor(offset / blockBytes);
      if (Math.floor((offset + length - 1) / blockBytes) !== index && length > 0)
        throw new Error(`block window: ${offset}+${length} crosses a block`);
      const block = await blockAt(index);
      const data = await block.data;
      const from = offset - index * blockBytes;
      if (data.length < from + length) {
        throw new IpaError(
          'ZIP_TRUNCATED',
          `Expected ${length} bytes at offset ${offset} of the source archive, found the file ends first.`,
        );
      }
      block.holds++;
      let released = false;
      return {
        bytes: data.subarray(from, from + length),
        release: () => {
          if (released) return;
          released = true;
          giveBack(block);
        },
      };
    },
    close() {
      // Blocks still held go when their last range is released.
      closed = true;
      for (const buffer of free.splice(0)) discard(buffer);
      if (current !== undefined) giveBack(current);
      if (ahead !== undefined) giveBack(ahead);
      current = undefined;
      ahead = undefined;
    },
  };
}

/** Splits [start, end) at multiples of `blockBytes`. */
export function* blockChunks(start: number, end: number, blockBytes: number): Generator<[number, number]> {
  for (let at = start; at < end;) {
    const next = Math.min(end, (Math.floor(at / blockBytes) + 1) * blockBytes);
    yield [at, next - at];
    at = next;
  }
}
