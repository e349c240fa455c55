/**
 * The digester: SHA-1 and SHA-256 of zip entries' contents, read from the archive file itself. The
 * digest threads run it (digest-worker.ts), and so does a thread that helps them once its own work
 * is done (pool.ts): one module, which both import. It imports little (Node's modules, the Mach-O
 * magic, discard.ts), so a thread that loads it stays small.
 *
 * It takes batches of entries (in file order) and answers their digests, reading their stored
 * bytes with synchronous reads: a digest thread has nothing else to do (a helping thread yields
 * between batches), and a round trip through libuv's pool per small file (a thread woken, a
 * callback queued) costs more than hashing the file. Small deflated entries inflate here in one
 * call; large ones stream through an inflater on libuv's pool, their pieces hashed here as they
 * come back. Each entry's size and CRC-32 are checked against its central record.
 *
 * createDigester(path).run(tasks) takes a Float64Array with TASK_FIELDS numbers per entry and
 * answers { digests } (DIGEST_BYTES per entry, in the batch's order) or { failed, kind, found }; a
 * thread gets the tasks and posts the answer as messages.
 */
import { createHash } from 'node:crypto';
import { closeSync, openSync, readSync } from 'node:fs';
import { crc32, createInflateRaw, inflateRawSync } from 'node:zlib';
import { isMachO } from '../macho/magic.js';
import { collectYoungEvery } from '../zip/discard.js';

/** Per entry: local header offset, name length, compressed size, size, method, CRC-32. */
export const TASK_FIELDS = 6;
// Per entry: SHA-1, SHA-256, then one byte that is 1 when the content starts with a Mach-O magic
// (thin in either byte order, or fat): the content passes here anyway, so signing learns which
// resources are code without reading them again.
export const DIGEST_BYTES = 20 + 32 + 1;
export const MACHO_FLAG_AT = 20 + 32;

/** A batch's digests, or which of its entries failed and why. */
export type DigestAnswer =
  { digests: Uint8Array<ArrayBuffer> } | { failed: number; kind: RefusalKind; found: string };
type RefusalKind = 'invalid' | 'truncated';

export interface Digester {
  run(tasks: Float64Array): Promise<DigestAnswer>;
  /** Closes the archive file. */
  close(): void;
}

// Reads of the file; an entry whose stored bytes fit is read with its local header in one call.
const READ_BYTES = 1 << 20;
// A deflated entry up to this size inflates in one call; larger ones stream.
const WHOLE_BYTES = 1 << 20;
// Pieces a streamed entry inflates to.
const INFLATE_CHUNK_BYTES = 256 << 10;
// Local header (30 bytes) plus room for its name and a usual extra field, read with the data.
const HEAD_SLACK = 30 + 128;
const LOCAL_SIGNATURE = 0x04034b50;
// Inflated pieces are buffers outside V8's heap, freed when the collector finds them dead; their
// small JS objects barely fill the young generation, so dead ones would pile up (tens of MB) before
// a collection. After every few MiB of them, one is brought about (discard.ts).
const COLLECT_EVERY_BYTES = 4 << 20;

interface Task {
  readonly offset: number;
  readonly nameLength: number;
  readonly compressedSize: number;
  readonly size: number;
  readonly method: number;
  readonly crc: number;
}

class Refusal extends Error {
  constructor(
    readonly kind: RefusalKind,
    found: string,
  ) {
    super(found);
  }
}

interface Hasher {
  update(bytes: Buffer): void;
  finish(out: Buffer, at: number): void;
}

export function createDigester(path: string): Digester {
  const fd = openSync(path, 'r');
  // Two, so a streamed entry reads its next block while zlib still holds the last one.
  const blocks = [Buffer.allocUnsafe(READ_BYTES + HEAD_SLACK), Buffer.allocUnsafe(READ_BYTES)] as const;
  const made = collectYoungEvery(COLLECT_EVERY_BYTES);

  /** Reads up to length bytes at position into buffer; fewer only at the end of the file. */
  function readUpTo(buffer: Buffer, length: number, position: number): Buffer {
    let done = 0;
    while (done < length) {
      const n = readSync(fd, buffer, done, length - done, position + done);
      if (n === 0) break;
      done += n;
    }
    return buffer.subarray(0, done);
  }

  function readExactly(buffer: Buffer, length: number, position: number): Buffer {
    const bytes = readUpTo(buffer, length, position);
    if (bytes.length < length)
      throw new Refusal('truncated', `the file ends at offset ${position + bytes.length}`);
    return bytes;
  }

  function hasher(task: Task): Hasher {
    const sha1 = createHash('sha1');
    const sha256 = createHash('sha256');
    let crc = 0;
    let length = 0;
    // The first bytes, however the content arrives in pieces.
    const head = Buffer.alloc(4);
    return {
      update(bytes) {
        if (length < 4) bytes.copy(head, length, 0, Math.min(bytes.length, 4 - length));
        sha1.update(bytes);
        sha256.update(bytes);
        crc = crc32(bytes, crc);
        length += bytes.length;
        if (length > task.size) throw new Refusal('invalid', `more than the ${task.size} bytes recorded`);
      },
      finish(out, at) {
        if (length !== task.size)
          throw new Refusal('invalid', `inflated to ${length} bytes, expected ${task.size}`);
        if (crc >>> 0 !== task.crc) {
          throw new Refusal(
            'invalid',
            `CRC-32 0x${(crc >>> 0).toString(16)}, expected 0x${task.crc.toString(16)}`,
          );
        }
        sha1.digest().copy(out, at);
        sha256.digest().copy(out, at + 20);
        out[at + MACHO_FLAG_AT] = isMachO(head.subarray(0, Math.min(length, 4))) ? 1 : 0;
      },
    };
  }

  /** Where an entry's stored bytes start: after its local header's name and extra field (APPNOTE 4.3.7). */
  function dataStart(head: Buffer, task: Task): number {
    // local file header: signature, ..., file name length (26), extra field length (28), then both
    if (head.length < 30 || head.readUInt32LE(0) !== LOCAL_SIGNATURE) {
      throw new Refusal('invalid', `no local file header at offset ${task.offset}`);
    }
    return 30 + head.readUInt16LE(26) + head.readUInt16LE(28);
  }

  async function digest(task: Task, out: Buffer, at: number): Promise<void> {
    const hash = hasher(task);
    if (task.method !== 0 && task.method !== 8)
      throw new Refusal('invalid', `unsupported compression method ${task.method}`);
    const wanted = 30 + task.nameLength + task.compressedSize + HEAD_SLACK;
    if (wanted <= blocks[0].length && (task.method === 0 || task.size <= WHOLE_BYTES)) {
      // Small: header and data in one read (the slack covers the extra field; past it, read again).
      const got = readUpTo(blocks[0], wanted, task.offset);
      const start = dataStart(got, task);
      const data =
        start + task.compressedSize <= got.length
          ? got.subarray(start, start + task.compressedSize)
          : readExactly(blocks[1], task.compressedSize, task.offset + start);
      if (data.length < task.compressedSize) throw new Refusal('truncated', 'the file ends inside it');
      if (task.method === 0) hash.update(data);
      else if (task.compressedSize > 0) hash.update(inflateWhole(data, task));
      // A deflated entry with no data at all is empty content, which only an empty entry may have.
      return hash.finish(out, at);
    }
    const start = task.offset + dataStart(readExactly(blocks[0], 30, task.offset), task);
    if (task.method === 0) {
      for (let done = 0; done < task.compressedSize; done += READ_BYTES) {
        hash.update(readExactly(blocks[0], Math.min(READ_BYTES, task.compressedSize - done), start + done));
      }
      return hash.finish(out, at);
    }
    await inflateStreamed(task, start, hash);
    return hash.finish(out, at);
  }

  function inflateWhole(data: Buffer, task: Task): Buffer {
    try {
      // One output buffer with a byte to spare: no pieces for zlib to join, and too much shows.
      const content = inflateRawSync(data, {
        chunkSize: Math.max(64, task.size + 1),
        maxOutputLength: task.size + 1,
      });
      made(content.length);
      return content;
    } catch (err) {
      const { code, message } = err as NodeJS.ErrnoException;
      throw new Refusal(
        'invalid',
        code === 'ERR_BUFFER_TOO_LARGE' ? `more than the ${task.size} bytes recorded` : message,
      );
    }
  }

  /** Inflates on libuv's pool, block by block; pieces are hashed here as they come back. */
  async function inflateStreamed(task: Task, start: number, hash: Hasher): Promise<void> {
    const inflater = createInflateRaw({ chunkSize: INFLATE_CHUNK_BYTES });
    let failure: unknown;
    inflater.on('data', (piece: Buffer) => {
      try {
        hash.update(piece);
        made(piece.length);
      } catch (err) {
        failure ??= err;
        inflater.destroy();
      }
    });
    const ended = new Promise<void>((resolve, reject) => {
      inflater.on('end', resolve);
      inflater.on('close', resolve);
      inflater.on('error', reject);
    });
    ended.catch(() => undefined);
    try {
      for (
        let done = 0, i = 0;
        done < task.compressedSize && failure === undefined && !inflater.destroyed;
        done += READ_BYTES, i++
      ) {
        const chunk = readExactly(
          blocks[i & 1]!,
          Math.min(READ_BYTES, task.compressedSize - done),
          start + done,
        );
        // zlib reads the chunk on the pool until the write's callback; the other block is read
        // meanwhile. Should the inflater be destroyed meanwhile, 'close' ends the wait instead.
        await Promise.race([new Promise<void>((resolve) => inflater.write(chunk, () => resolve())), ended]);
      }
      if (failure === undefined && !inflater.destroyed) inflater.end();
      await ended;
    } catch (err) {
      throw err instanceof Refusal ? err : new Refusal('invalid', (err as Error).message);
    }
    if (failure !== undefined) throw failure;
  }

  async function run(tasks: Float64Array): Promise<DigestAnswer> {
    const count = tasks.length / TASK_FIELDS;
    const digests = new Uint8Array(count * DIGEST_BYTES);
    const out = Buffer.from(digests.buffer);
    for (let i = 0; i < count; i++) {
      const f = i * TASK_FIELDS;
      const task: Task = {
        offset: tasks[f]!,
        nameLength: tasks[f + 1]!,
        compressedSize: tasks[f + 2]!,
        size: tasks[f + 3]!,
        method: tasks[f + 4]!,
        crc: tasks[f + 5]!,
      };
      try {
        await digest(task, out, i * DIGEST_BYTES);
      } catch (err) {
        return {
          failed: i,
          kind: err instanceof Refusal ? err.kind : 'invalid',
          found: String((err as Error | undefined)?.message || err),
        };
      }
    }
    return { digests };
  }

  return { run, close: () => closeSync(fd) };
}
