/**
 * The digest worker, as source text run with `new Worker(code, { eval: true })`, so the same code
 * works from TypeScript sources (tests) and from the build. It reads an entry's local header and
 * compressed bytes straight from the file (APPNOTE 4.3.7), inflates them and hashes the content.
 */
export const DIGEST_WORKER_SOURCE = String.raw`
const { parentPort, workerData } = require('node:worker_threads');
const { createReadStream, openSync, readSync } = require('node:fs');
const { createHash } = require('node:crypto');
const zlib = require('node:zlib');

const CHUNK_BYTES = 1 << 20;
// Inflated in one call up to this size (memory per worker), streamed beyond.
const INFLATE_WHOLE_BYTES = 1 << 20;
// Reads are synchronous: this thread has nothing else to do, and a round trip through libuv's
// pool per small file would cost more than the file.
const fd = openSync(workerData.path, 'r');

// One reused buffer for stored data and small entries: fresh multi-MiB buffers cost page faults.
const scratch = Buffer.allocUnsafe(CHUNK_BYTES);

function readAt(length, position) {
  const buffer = length <= CHUNK_BYTES ? scratch.subarray(0, length) : Buffer.allocUnsafe(length);
  let done = 0;
  while (done < length) {
    const bytesRead = readSync(fd, buffer, done, length - done, position + done);
    if (bytesRead === 0) throw new Error('the file ends at ' + (position + done) + ', inside an entry');
    done += bytesRead;
  }
  return buffer;
}

async function digest(task) {
  // Local file header: signature 0x04034b50, name length at 26, extra length at 28; 30 fixed bytes.
  const header = readAt(30, task.offset);
  if (header.readUInt32LE(0) !== 0x04034b50) throw new Error('invalid local file header signature at ' + task.offset);
  const start = task.offset + 30 + header.readUInt16LE(26) + header.readUInt16LE(28);
  const sha1 = createHash('sha1');
  const sha256 = createHash('sha256');
  let length = 0;
  let crc = 0;
  const update = (bytes) => { sha1.update(bytes); sha256.update(bytes); crc = zlib.crc32(bytes, crc); length += bytes.length; };
  if (task.method !== 0 && task.method !== 8) throw new Error('unsupported compression method ' + task.method);
  if (task.method === 0) {
    for (let at = 0; at < task.compressedSize; at += CHUNK_BYTES) update(readAt(Math.min(CHUNK_BYTES, task.compressedSize - at), start + at));
  } else if (task.uncompressedSize <= INFLATE_WHOLE_BYTES) {
    update(task.compressedSize === 0 ? Buffer.alloc(0) : zlib.inflateRawSync(readAt(task.compressedSize, start)));
  } else {
    // Very large deflated entries stream, so memory stays flat whatever their size.
    const source = createReadStream(workerData.path, { start, end: start + task.compressedSize - 1, highWaterMark: CHUNK_BYTES });
    for await (const chunk of source.pipe(zlib.createInflateRaw({ chunkSize: 1 << 20 }))) update(chunk);
  }
  if (length !== task.uncompressedSize) throw new Error('inflated to ' + length + ' bytes, expected ' + task.uncompressedSize);
  if ((crc >>> 0) !== task.crc32) throw new Error('CRC-32 0x' + (crc >>> 0).toString(16) + ', expected 0x' + task.crc32.toString(16));
  return { sha1: sha1.digest(), sha256: sha256.digest() };
}

parentPort.on('message', async (tasks) => {
  const results = [];
  for (const task of tasks) {
    try {
      const d = await digest(task);
      results.push({ id: task.id, sha1: d.sha1, sha256: d.sha256 });
    } catch (err) {
      results.push({ id: task.id, error: String((err && err.message) || err) });
    }
  }
  parentPort.postMessage(results);
});
`;
