import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { AppError, fail, failWith } from '../../platform/errors.js';

export const uploadTooLarge = (maxBytes: number) => fail('UPLOAD_TOO_LARGE', maxBytes);

/**
 * Streams an upload to a new file under `dir`, never holding it in memory, and stops at
 * `maxBytes` (the declared length is checked first, then every byte counted). The partial file is
 * removed on any failure.
 */
export async function receiveToFile(
  body: Readable,
  options: { dir: string; maxBytes: number; declaredBytes?: number },
) {
  if (options.declaredBytes !== undefined && options.declaredBytes > options.maxBytes) {
    body.resume();
    throw uploadTooLarge(options.maxBytes);
  }
  await mkdir(options.dir, { recursive: true });
  const file = path.join(options.dir, `upload-${randomUUID()}.ipa`);
  let sizeBytes = 0;
  // 1 MiB buffers: the socket's 64 KiB chunks reach the disk in a few large writev calls, not one
  // write each (a 1 GB upload would otherwise cost 16,000 system calls).
  const buffered = { highWaterMark: 1024 * 1024 };
  const counter = new Transform({
    ...buffered,
    transform(chunk: Buffer, _encoding, callback) {
      sizeBytes += chunk.length;
      if (sizeBytes > options.maxBytes) return callback(uploadTooLarge(options.maxBytes));
      callback(null, chunk);
    },
  });
  try {
    await pipeline(body, counter, createWriteStream(file, buffered));
  } catch (err) {
    await rm(file, { force: true });
    if (err instanceof AppError) throw err;
    throw failWith('UPLOAD_INTERRUPTED', { cause: err });
  }
  if (options.declaredBytes !== undefined && sizeBytes !== options.declaredBytes) {
    await rm(file, { force: true });
    throw fail('UPLOAD_INTERRUPTED');
  }
  return { path: file, sizeBytes };
}
