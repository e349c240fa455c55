/**
 * Digests (SHA-1 and SHA-256) of many zip entries' contents, on a digest thread (digest-worker.ts,
 * running digester.ts) that reads them from the file itself: hashing a gigabyte of resources takes
 * a core for over a second, and on the main thread it held up the copy that runs beside it. One
 * thread by default, so one more V8 heap (some 8 MB); its young generation is kept small.
 */
import { Worker } from 'node:worker_threads';
import { IpaError } from '../errors.js';
import { centralFieldsOf, type ZipEntry } from '../zip/index.js';
import { LOCAL_SIGNATURE } from '../zip/records.js';
import { createDigester, DIGEST_BYTES, MACHO_FLAG_AT, TASK_FIELDS, type DigestAnswer } from './digester.js';

// The digest thread's module, beside this one: digest-worker.js once built. From the TypeScript
// sources (tests, tsx) a thread cannot load digest-worker.ts by itself; a shim registers tsx first.
const workerFile = import.meta.url.endsWith('.ts')
  ? new URL('./digest-worker-from-source.mjs', import.meta.url)
  : new URL('./digest-worker.js', import.meta.url);

export interface FileDigests {
  readonly sha1: Buffer;
  readonly sha256: Buffer;
  /** Set when the content starts with a Mach-O magic (known where the digest was taken from the archive). */
  readonly isMachO?: boolean;
}

export interface DigestOptions {
  /** Digest threads (one by default): each takes batches of entries in turn. */
  workers?: number;
  /**
   * Once this resolves (say, when a copy that shares the cores is done), this thread digests
   * batches too, beside the digest threads, if enough is left: a second core at work without a
   * second thread's heap. Each batch runs here for some tens of milliseconds at a time.
   */
  helpWhen?: Promise<unknown>;
  /** Called as batches finish, with the count of entries so far. */
  onProgress?: (done: number, total: number) => void;
  /** Stops the threads and rejects, when aborted before the digests are done. */
  signal?: AbortSignal;
}

// A batch: a few MiB of stored bytes or a few hundred entries; few messages, and the last
// batches finish close together when there are several threads.
const BATCH_BYTES = 8 * 1024 * 1024;
const BATCH_ENTRIES = 256;
// Batches waiting in a thread's queue beside the one it digests, so it never waits for the next.
const QUEUED_PER_WORKER = 2;
const MAX_WORKERS = 8;
// This thread helps only when this many batches are still unclaimed.
const MIN_BATCHES_TO_HELP = 2;

/** Digests of `entries` (regular files of the archive at `path`), by entry name. */
export async function digestEntries(
  path: string,
  entries: readonly ZipEntry[],
  options: DigestOptions = {},
): Promise<Map<string, FileDigests>> {
  const result = new Map<string, FileDigests>();
  options.signal?.throwIfAborted();
  if (entries.length === 0) return result;
  // In file order, so the reads go forward through the file.
  const inFileOrder = [...entries].sort(
    (a, b) => centralFieldsOf(a).relativeOffsetOfLocalHeader - centralFieldsOf(b).relativeOffsetOfLocalHeader,
  );
  const batches = toBatches(inFileOrder);
  const workerCount = Math.max(1, Math.min(options.workers ?? 1, MAX_WORKERS, batches.length));
  const workers: Worker[] = [];
  let next = 0;
  let done = 0;
  try {
    await new Promise<void>((resolve, reject) => {
      let settled = false;
      const fail = (err: unknown): void => {
        if (settled) return;
        settled = true;
        reject(err);
      };
      const onAbort = (): void => fail(options.signal!.reason);
      options.signal?.addEventListener('abort', onAbort, { once: true });
      const finish = (): void => {
        options.signal?.removeEventListener('abort', onAbort);
        if (!settled) {
          settled = true;
          resolve();
        }
      };
      const take = (batch: readonly ZipEntry[], answer: DigestAnswer): void => {
        if ('failed' in answer) return fail(refusal(batch[answer.failed]!, answer.kind, answer.found));
        const bytes = Buffer.from(
          answer.digests.buffer,
          answer.digests.byteOffset,
          answer.digests.byteLength,
        );
        batch.forEach((entry, i) => {
          const at = i * DIGEST_BYTES;
          result.set(entry.name, {
            sha1: bytes.subarray(at, at + 20),
            sha256: bytes.subarray(at + 20, at + 52),
            isMachO: bytes[at + MACHO_FLAG_AT] === 1,
          });
        });
        done += batch.length;
        options.onProgress?.(done, entries.length);
        if (done === entries.length) finish();
      };
      for (let w = 0; w < workerCount; w++) {
        // A small young generation: the thread makes few JS objects, and its dead buffers go
        // with the young generation's collections.
        const worker = new Worker(workerFile, {
          workerData: { path },
          resourceLimits: { maxYoungGenerationSizeMb: 4, maxOldGenerationSizeMb: 32 },
        });
        workers.push(worker);
        const sent: ZipEntry[][] = [];
        const send = (): void => {
          const batch = batches[next++];
          if (batch === undefined) return;
          sent.push(batch);
          worker.postMessage({ tasks: tasksOf(batch) });
        };
        worker.on('message', (answer: DigestAnswer) => {
          take(sent.shift()!, answer);
          send();
        });
        worker.on('error', fail);
        worker.on('exit', (code) => {
          if (sent.length > 0)
            fail(
              new Error(
                `The digest thread stopped (exit code ${code}) with ${sent.length} batches unanswered.`,
              ),
            );
        });
        for (let i = 0; i <= QUEUED_PER_WORKER; i++) send();
      }
      options.helpWhen
        ?.then(
          async () => {
            if (settled || batches.length - next < MIN_BATCHES_TO_HELP) return;
            // The threads' own code, here: a second core at work without a second heap.
            const digester = createDigester(path);
            try {
              while (!settled && next < batches.length) {
                const batch = batches[next++]!;
                take(batch, await digester.run(tasksOf(batch)));
                // Between batches, what waits on this thread (answers from the threads, writes) runs.
                await new Promise((resolve) => setImmediate(resolve));
              }
            } finally {
              digester.close();
            }
          },
          () => undefined,
        )
        .catch(fail);
    });
  } finally {
    await Promise.all(workers.map((worker) => worker.terminate()));
  }
  return result;
}

function toBatches(entries: readonly ZipEntry[]): ZipEntry[][] {
  const batches: ZipEntry[][] = [];
  let batch: ZipEntry[] = [];
  let bytes = 0;
  for (const entry of entries) {
    batch.push(entry);
    bytes += entry.compressedSizeBytes;
    if (batch.length >= BATCH_ENTRIES || bytes >= BATCH_BYTES) {
      batches.push(batch);
      batch = [];
      bytes = 0;
    }
  }
  if (batch.length > 0) batches.push(batch);
  return batches;
}

/** A batch as the digester takes it: TASK_FIELDS numbers per entry (digester.ts). */
export function tasksOf(batch: readonly ZipEntry[]): Float64Array {
  const tasks = new Float64Array(batch.length * TASK_FIELDS);
  batch.forEach((entry, i) => {
    const raw = centralFieldsOf(entry);
    tasks.set(
      [
        raw.relativeOffsetOfLocalHeader,
        raw.fileNameRaw?.length ?? Buffer.byteLength(entry.name),
        entry.compressedSizeBytes,
        entry.uncompressedSizeBytes,
        entry.compressionMethod,
        entry.crc32 >>> 0,
      ],
      i * TASK_FIELDS,
    );
  });
  return tasks;
}

function refusal(entry: ZipEntry, kind: 'invalid' | 'truncated', found: string): IpaError {
  if (kind === 'truncated') {
    return new IpaError(
      'ZIP_TRUNCATED',
      `Expected the stored bytes of "${entry.name}" in the archive, found ${found}.`,
    );
  }
  return new IpaError(
    'ZIP_INVALID',
    `Expected "${entry.name}" to inflate to the ${entry.uncompressedSizeBytes} bytes and CRC-32 its header records, found: ${found}.`,
  );
}

/** Where an entry's stored bytes start: after its local header's name and extra field (APPNOTE 4.3.7). */
export async function entryDataStart(
  block: { read(offset: number, length: number): Promise<Buffer> },
  entry: ZipEntry,
): Promise<number> {
  const offset = centralFieldsOf(entry).relativeOffsetOfLocalHeader;
  const header = await block.read(offset, 30);
  if (header.readUInt32LE(0) !== LOCAL_SIGNATURE) {
    throw new IpaError(
      'ZIP_INVALID',
      `Expected a local file header for "${entry.name}" at offset ${offset}, found 0x${header.readUInt32LE(0).toString(16)}.`,
    );
  }
  return offset + 30 + header.readUInt16LE(26) + header.readUInt16LE(28);
}
