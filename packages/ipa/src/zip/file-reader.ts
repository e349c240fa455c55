/**
 * A yauzl random-access reader over a file that serves small reads from a 1 MiB window read ahead.
 * yauzl reads the central directory one record at a time, two small reads per entry; on an IPA of
 * tens of thousands of entries those round trips dominate opening it.
 */
import { close, open, read } from 'node:fs';
import { Readable } from 'node:stream';
import yauzl from 'yauzl';

const WINDOW_BYTES = 1024 * 1024;
const SMALL_READ_BYTES = 64 * 1024;

/** yauzl's reader, and plain positional reads of the same file (no window: see layout.ts). */
export interface FileReader extends yauzl.RandomAccessReader {
  /** `length` bytes at `position`, fewer only where the file ends; into `into` when it is large enough. */
  readRange(position: number, length: number, into?: Buffer): Promise<Buffer>;
}

export function openFileReader(path: string): Promise<FileReader> {
  return new Promise((resolve, reject) => {
    open(path, 'r', (err, fd) => {
      if (err) return reject(err);
      resolve(createFileReader(fd));
    });
  });
}

function createFileReader(fd: number): FileReader {
  // The class is abstract in the typings only; yauzl documents subclassing or overriding its methods.
  const reader = new (yauzl.RandomAccessReader as unknown as new () => yauzl.RandomAccessReader)();
  let windowStart = 0;
  let window = Buffer.alloc(0);
  const readRaw = (
    buffer: Buffer,
    offset: number,
    length: number,
    position: number,
    callback: (err: Error | null, bytesRead: number) => void,
  ): void => {
    let done = 0;
    const next = (): void => {
      read(fd, buffer, offset + done, length - done, position + done, (err, n) => {
        if (err) return callback(err, done);
        done += n;
        if (n === 0 || done === length) return callback(null, done);
        next();
      });
    };
    next();
  };
  reader.read = (
    buffer: Buffer,
    offset: number,
    length: number,
    position: number,
    callback: (err: Error | null) => void,
  ): void => {
    if (position >= windowStart && position + length <= windowStart + window.length) {
      window.copy(buffer, offset, position - windowStart, position - windowStart + length);
      queueMicrotask(() => callback(null));
      return;
    }
    if (length > SMALL_READ_BYTES) {
      readRaw(buffer, offset, length, position, (err, n) =>
        callback(err ?? (n < length ? new Error('unexpected EOF') : null)),
      );
      return;
    }
    const fresh = Buffer.allocUnsafe(WINDOW_BYTES);
    readRaw(fresh, 0, WINDOW_BYTES, position, (err, n) => {
      if (err) return callback(err);
      windowStart = position;
      window = fresh.subarray(0, n);
      if (n < length) return callback(new Error('unexpected EOF'));
      window.copy(buffer, offset, 0, length);
      callback(null);
    });
  };
  // Not fs.createReadStream: destroying one closes the shared descriptor, autoClose or not.
  reader._readStreamForRange = (start: number, end: number): Readable => {
    let position = start;
    return new Readable({
      highWaterMark: WINDOW_BYTES,
      read(size) {
        const length = Math.min(Math.max(size, 64 * 1024), WINDOW_BYTES, end - position);
        if (length <= 0) return void this.push(null);
        const chunk = Buffer.allocUnsafe(length);
        read(fd, chunk, 0, length, position, (err, n) => {
          if (err) return this.destroy(err);
          if (n === 0) return this.destroy(new Error('unexpected EOF'));
          position += n;
          this.push(chunk.subarray(0, n));
        });
      },
    });
  };
  reader.close = (callback) => close(fd, (err) => callback(err ?? null));
  const readRange = (position: number, length: number, into?: Buffer): Promise<Buffer> => {
    const bytes = into !== undefined && into.length >= length ? into : Buffer.allocUnsafe(length);
    return new Promise((resolve, reject) =>
      readRaw(bytes, 0, length, position, (err, n) => (err ? reject(err) : resolve(bytes.subarray(0, n)))),
    );
  };
  return Object.assign(reader, { readRange });
}
