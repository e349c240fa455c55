/**
 * Signs a Mach-O read through a random-access window and written to a sink, so a binary of any
 * size costs a few MiB of memory. The output is byte for byte what signMachO builds in memory:
 * the same plan per slice, the same fat layout, pages hashed as they pass.
 */
import { layOutFat, readMachO, type MachOSlice } from '../macho/parse.js';
import { HASH_SIZE, PAGE_SIZE } from './blobs.js';
import { hashPages, planSlice, type CodeSignInput, type SlicePlan } from './macho-sign.js';

/** Reads a range; the buffer it answers may be reused by the next read, so use it before then. */
export type ReadAt = (offset: number, length: number) => Promise<Buffer>;
/** Takes the next piece of output; the caller may reuse `chunk` once the promise resolves. */
export type Sink = (chunk: Buffer) => Promise<void>;

// Pages are hashed and written this many at a time.
const CHUNK_BYTES = 256 * PAGE_SIZE;

interface SliceJob {
  readonly offset: number;
  readonly size: number;
  readonly arch: string;
  readonly plan: SlicePlan;
  cdHash?: Buffer;
}

export interface StreamedCode {
  readonly sizeBytes: number;
  /** cdhash of the SHA-256 CodeDirectory (first 20 bytes), of the arm64 slice or the first. */
  readonly cdHash: Buffer;
}

export async function signMachOStream(
  read: ReadAt,
  sizeBytes: number,
  where: string,
  input: CodeSignInput,
  sink: Sink,
): Promise<StreamedCode> {
  const file = await readMachO({ sizeBytes, read }, where);
  const jobs: SliceJob[] = [];
  for (const slice of file.slices) jobs.push(await planJob(read, slice, where, input));
  const signedSize = (job: SliceJob): number => job.plan.codeLimit + job.plan.signatureSize;
  if (!file.isFat) {
    await streamSlice(read, jobs[0]!, sink);
    return { sizeBytes: signedSize(jobs[0]!), cdHash: jobs[0]!.cdHash! };
  }
  // The same layout as rebuildMachO, in a copy of the file's fat header.
  const header = Buffer.from(await read(0, file.fatTableBytes!));
  const offsets = layOutFat(header, file, jobs.map(signedSize), where);
  await sink(header);
  let written = header.length;
  for (const [i, job] of jobs.entries()) {
    if (offsets[i]! > written) await sink(Buffer.alloc(offsets[i]! - written));
    await streamSlice(read, job, sink);
    written = offsets[i]! + signedSize(job);
  }
  const preferred = jobs.find((j) => j.arch === 'arm64') ?? jobs[0]!;
  return { sizeBytes: written, cdHash: preferred.cdHash! };
}

async function planJob(
  read: ReadAt,
  slice: MachOSlice,
  where: string,
  input: CodeSignInput,
): Promise<SliceJob> {
  // The plan needs the header, the load commands and the 16 bytes after them (a new LC_CODE_SIGNATURE).
  const head = await read(
    slice.offset,
    Math.min(slice.size, slice.headerSizeBytes + slice.commandsSizeBytes + 16),
  );
  return {
    offset: slice.offset,
    size: slice.size,
    arch: slice.arch,
    plan: planSlice(head, slice.size, slice, where, input),
  };
}

/** Streams one slice: its code with the header edits, hashed page by page, then its signature. */
async function streamSlice(read: ReadAt, job: SliceJob, sink: Sink): Promise<void> {
  const { plan } = job;
  const pageCount = Math.ceil(plan.codeLimit / PAGE_SIZE);
  const sha1 = Buffer.alloc(pageCount * HASH_SIZE.sha1);
  const sha256 = Buffer.alloc(pageCount * HASH_SIZE.sha256);
  // One buffer for every chunk: the sink is done with a chunk when its promise resolves.
  const buffer = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, plan.codeLimit));
  for (let at = 0; at < plan.codeLimit; at += CHUNK_BYTES) {
    const length = Math.min(CHUNK_BYTES, plan.codeLimit - at);
    const available = Math.max(0, Math.min(length, job.size - at));
    const chunk = buffer.subarray(0, length);
    if (available > 0) (await read(job.offset + at, available)).copy(chunk);
    // Past the slice's end (a signature added after __LINKEDIT's padding) the code is zeros.
    chunk.fill(0, available);
    if (at < plan.head.length) plan.head.copy(chunk, 0, at, Math.min(plan.head.length, at + length));
    const page = at / PAGE_SIZE;
    hashPages(chunk, 'sha1', sha1, page * HASH_SIZE.sha1);
    hashPages(chunk, 'sha256', sha256, page * HASH_SIZE.sha256);
    await sink(chunk);
  }
  const { signature, cdHash } = plan.finish({ sha1, sha256 });
  job.cdHash = cdHash;
  await sink(signature);
}
