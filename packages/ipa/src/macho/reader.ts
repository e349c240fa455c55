/**
 * Random access to a Mach-O's bytes, wherever they are: in memory, in a temporary file, or in a
 * zip entry as it inflates. The Mach-O parser (parse.ts) reads through one, as yauzl's zip reader
 * reads through its RandomAccessReader, so one parser serves them all.
 *
 * The parser is written as steps (a generator): it yields the byte range it needs next and is
 * resumed with those bytes. runOnBuffer answers each range with a view of a Buffer, at once;
 * runOnReader answers it with a ByteReader's read. The same parse, whether the caller may wait.
 */
import type { Readable } from 'node:stream';
import { IpaError } from '../errors.js';

export interface ByteReader {
  /** The file's size: every read lies within it (the parser checks each range against it first). */
  readonly sizeBytes: number;
  /**
   * `length` bytes at `offset`. The answer may be a view of storage that the next read reuses: use
   * it, or copy what is kept, before reading again.
   */
  read(offset: number, length: number): Promise<Buffer>;
}

/** A byte range a parse asks for: `length` bytes at `offset` of the file. */
export interface ReadRequest {
  readonly offset: number;
  readonly length: number;
}

/** A parse in steps: it yields the ranges it needs, is resumed with their bytes, returns its result. */
export type Parse<T> = Generator<ReadRequest, T, Buffer>;

/** Bytes in memory as a reader: each read is a view of them, never a copy. */
export function bufferReader(bytes: Buffer): ByteReader {
  return { sizeBytes: bytes.length, read: async (offset, length) => bytes.subarray(offset, offset + length) };
}

/** Runs a parse over bytes in memory, synchronously: each range is a view of them, never a copy. */
export function runOnBuffer<T>(bytes: Buffer, parse: Parse<T>): T {
  let step = parse.next();
  while (!step.done)
    step = parse.next(bytes.subarray(step.value.offset, step.value.offset + step.value.length));
  return step.value;
}

/** Runs a parse through a reader, one read at a time. */
export async function runOnReader<T>(reader: ByteReader, parse: Parse<T>): Promise<T> {
  let step = parse.next();
  while (!step.done) step = parse.next(await reader.read(step.value.offset, step.value.length));
  return step.value;
}

/**
 * A zip entry's content as it streams past (an inflating entry cannot be read out of order): each
 * read starts at or after the one before, as the parser's do (it visits a fat file's slices in
 * file order), and only the pieces from the last read's start on are held. A read within one
 * piece of the stream is a view of it; one across pieces is joined into a new buffer.
 */
export function streamReader(stream: Readable, sizeBytes: number, where: string): ByteReader {
  const pieces = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  // The pieces that cover [heldFrom, streamed), in order.
  const held: Buffer[] = [];
  let heldFrom = 0;
  let streamed = 0;
  return {
    sizeBytes,
    async read(offset, length) {
      if (offset < heldFrom)
        throw new Error(`stream reader: a read at ${offset} goes back before ${heldFrom}`);
      if (length === 0) return Buffer.alloc(0);
      while (held.length > 0 && heldFrom + held[0]!.length <= offset) heldFrom += held.shift()!.length;
      while (streamed < offset + length) {
        const next = await pieces.next();
        if (next.done)
          throw new IpaError(
            'MACHO_TRUNCATED',
            `Expected ${where} to hold ${sizeBytes} bytes, found it ends at ${streamed}.`,
          );
        streamed += next.value.length;
        if (held.length === 0 && streamed <= offset)
          heldFrom = streamed; // all before the read: skipped
        else held.push(next.value);
      }
      const from = offset - heldFrom;
      if (from + length <= held[0]!.length) return held[0]!.subarray(from, from + length);
      const joined = Buffer.allocUnsafe(length);
      let at = 0;
      let skip = from;
      for (const piece of held) {
        if (at === length) break;
        if (skip >= piece.length) {
          skip -= piece.length;
          continue;
        }
        at += piece.copy(joined, at, skip, Math.min(piece.length, skip + length - at));
        skip = 0;
      }
      return joined;
    },
  };
}
