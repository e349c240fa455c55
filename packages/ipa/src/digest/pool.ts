/**
 * Digests (SHA-1 and SHA-256) of many zip entries' contents, spread over worker threads: inflating
 * is the slow part of sealing resources, and each worker inflates its share from the file itself.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { IpaError } from '../errors.js';
import type { ZipEntry } from '../zip/index.js';
import { DIGEST_WORKER_SOURCE } from './worker-source.js';

export interface FileDigests {
  readonly sha1: Buffer;
  readonly sha256: Buffer;
}

interface Task {
  id: number;
  offset: number;
  compressedSize: number;
  uncompressedSize: number;
  method: number;
  crc32: number;
}

type Result = { id: number; sha1: Uint8Array; sha256: Uint8Array } | { id: number; error: string };

// A batch is a few MiB of work or a few hundred small files: few messages, even shares.
const BATCH_COST = 16 * 1024 * 1024;
const BATCH_ENTRIES = 256;
const MAX_WORKERS = 8;

export interface DigestOptions {
  /** Worker threads; one less than the machine's parallelism by default (at least one). */
  workers?: number;
  /** Called after each batch with the entries digested so far. */
  onProgress?: (done: number, total: number) => void;
}

/** Digests of `entries` (regular files of the archive at `path`), by entry name. */
export async function digestEntries(path: string, entries: readonly ZipEntry[], options: DigestOptions = {}): Promise<Map<string, FileDigests>> {
  const result = new Map<string, FileDigests>();
  if (entries.length === 0) return result;
  const tasks: Task[] = entries.map((entry, id) => ({
    id,
    offset: entry.source.relativeOffsetOfLocalHeader,
    compressedSize: entry.compressedSizeBytes,
    uncompressedSize: entry.uncompressedSizeBytes,
    method: entry.compressionMethod,
    crc32: entry.crc32 >>> 0,
  }));
  const batches = toBatches(tasks);
  // The main thread copies the archive meanwhile, so leave it a core.
  const workerCount = Math.max(1, Math.min(options.workers ?? availableParallelism() - 1, MAX_WORKERS, batches.length));
  let next = 0;
  let done = 0;
  let failed = false;
  const runWorker = (): Promise<void> =>
    new Promise((resolve, reject) => {
      // A small young generation keeps each worker's garbage (inflated buffers) from piling up.
      const worker = new Worker(DIGEST_WORKER_SOURCE, { eval: true, workerData: { path }, resourceLimits: { maxYoungGenerationSizeMb: 4 } });
      const finish = (err?: unknown): void => {
        if (err) failed = true;
        void worker.terminate();
        if (err) reject(err);
        else resolve();
      };
      const send = (): void => {
        const batch = failed ? undefined : batches[next++];
        if (batch === undefined) return finish();
        worker.postMessage(batch);
      };
      worker.on('message', (results: Result[]) => {
        for (const item of results) {
          const entry = entries[item.id]!;
          if ('error' in item) {
            return finish(new IpaError('ZIP_INVALID', `Expected "${entry.name}" to inflate to the ${entry.uncompressedSizeBytes} bytes and CRC-32 its header records, found: ${item.error}.`));
          }
          result.set(entry.name, { sha1: Buffer.from(item.sha1), sha256: Buffer.from(item.sha256) });
        }
        done += results.length;
        options.onProgress?.(done, entries.length);
        send();
      });
      worker.on('error', finish);
      send();
    });
  await Promise.all(Array.from({ length: workerCount }, runWorker));
  return result;
}

/** Inflating costs several times more per byte than hashing stored data; both read the file. */
const costOf = (task: Task): number => task.uncompressedSize * (task.method === 8 ? 4 : 1) + 4096;

function toBatches(tasks: Task[]): Task[][] {
  // Costliest first, so the last batches are small and the workers finish together.
  const sorted = [...tasks].sort((a, b) => costOf(b) - costOf(a));
  const batches: Task[][] = [];
  let current: Task[] = [];
  let bytes = 0;
  for (const task of sorted) {
    current.push(task);
    bytes += costOf(task);
    if (bytes >= BATCH_COST || current.length >= BATCH_ENTRIES) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
  }
  if (current.length > 0) batches.push(current);
  return batches;
}
