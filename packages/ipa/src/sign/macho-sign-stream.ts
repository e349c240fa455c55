/**
 * Signs a Mach-O read through a random-access window and written to a sink, so a binary of any
 * size costs a few MiB of memory. The output is byte for byte what signMachO builds in memory:
 * the same plan per slice, the same fat layout, pages hashed as they pass.
 */
import { layOutFat, readMachO, type MachOSlice } from '../macho/parse.js';
import { HASH_SIZE, PAGE_SIZE } from './blobs.js';
import { needsSha1 } from './digest-choice.js';
import { NO_HASHES, hashPages, planSlice, type CodeSignInput, type SlicePlan } from './macho-sign.js';

/** Reads a range; the buffer it answers may be reused by the next read, so use it before then. */
export type ReadAt = (offset: number, length: number) => Promise<Buffer>;
/** Takes the next piece of output; the caller may reuse `chunk` once the promise resolves. */
export type Sink = (chunk: Buffer) => Promise<void>;

// Pages are hashed and written this many at a time.
export const CHUNK_BYTES = 256 * PAGE_SIZE;

/**
 * A thin binary's code from its second chunk to its code limit, as an earlier sign of the same
 * file wrote it (sign-ipa/code-cache.ts): the header edits all fall in the first chunk, so the rest
 * of the code, and its page hashes, do not change from one sign to the next.
 */
export interface SliceBody {
  readonly codeLimit: number;
  /** Hashes of the pages from CHUNK_BYTES on, each kind in one buffer. */
  readonly sha1: Buffer;
  readonly sha256: Buffer;
  /** Writes that code to the output, in the place of the chunks after the first. */
  copy(): Promise<void>;
}

export interface StreamOptions {
  /** The code after the first chunk, from an earlier sign: only the first chunk is read then. */
  readonly body?: SliceBody;
  /** Sees a thin binary's code limit and page hashes once it is signed, to keep them for the next sign. */
  readonly onSigned?: (slice: { codeLimit: number; sha1: Buffer; sha256: Buffer }) => Promise<void>;
}

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
  options: StreamOptions = {},
): Promise<StreamedCode> {
  const file = await readMachO({ sizeBytes, read }, where);
  const withSha1 = input.appNeedsSha1 === true || needsSha1(file.slices);
  const jobs: SliceJob[] = [];
  for (const slice of file.slices) jobs.push(await planJob(read, slice, where, input, withSha1));
  const signedSize = (job: SliceJob): number => job.plan.codeLimit + job.plan.signatureSize;
  if (!file.isFat) {
    const job = jobs[0]!;
    const { body } = options;
    if (body !== undefined && fitsBody(job, body)) await streamSliceWithBody(read, job, body, sink);
    else await streamSlice(read, job, sink, options.onSigned);
    return { sizeBytes: signedSize(job), cdHash: job.cdHash! };
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
  withSha1: boolean,
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
    plan: planSlice(head, slice.size, slice, where, input, withSha1),
  };
}

/** Whether a kept body continues this slice: the same code limit, and the header edits all in the first chunk. */
function fitsBody(job: SliceJob, body: SliceBody): boolean {
  return (
    job.offset === 0 &&
    body.codeLimit === job.plan.codeLimit &&
    job.plan.codeLimit > CHUNK_BYTES &&
    job.plan.head.length <= CHUNK_BYTES &&
    // A body kept without SHA-1 page hashes cannot serve a signature that needs them.
    (!job.plan.withSha1 || body.sha1.length > 0)
  );
}

/** The first chunk of a slice's code with the header edits, zeros past the slice's end. */
async function codeChunk(read: ReadAt, job: SliceJob, at: number, chunk: Buffer): Promise<void> {
  const available = Math.max(0, Math.min(chunk.length, job.size - at));
  if (available > 0) (await read(job.offset + at, available)).copy(chunk);
  chunk.fill(0, available);
  const { head } = job.plan;
  if (at < head.length) head.copy(chunk, 0, at, Math.min(head.length, at + chunk.length));
}

/** Streams a slice whose code after the first chunk was kept: the first chunk, the body as kept, a new signature. */
async function streamSliceWithBody(read: ReadAt, job: SliceJob, body: SliceBody, sink: Sink): Promise<void> {
  const { withSha1 } = job.plan;
  const pageCount = Math.ceil(job.plan.codeLimit / PAGE_SIZE);
  const sha1 = withSha1 ? Buffer.alloc(pageCount * HASH_SIZE.sha1) : NO_HASHES;
  const sha256 = Buffer.alloc(pageCount * HASH_SIZE.sha256);
  const first = Buffer.allocUnsafe(CHUNK_BYTES);
  await codeChunk(read, job, 0, first);
  if (withSha1) hashPages(first, 'sha1', sha1, 0);
  hashPages(first, 'sha256', sha256, 0);
  if (withSha1) body.sha1.copy(sha1, (CHUNK_BYTES / PAGE_SIZE) * HASH_SIZE.sha1);
  body.sha256.copy(sha256, (CHUNK_BYTES / PAGE_SIZE) * HASH_SIZE.sha256);
  await sink(first);
  await body.copy();
  const { signature, cdHash } = job.plan.finish({ sha1, sha256 });
  job.cdHash = cdHash;
  await sink(signature);
}

/** Streams one slice: its code with the header edits, hashed page by page, then its signature. */
async function streamSlice(
  read: ReadAt,
  job: SliceJob,
  sink: Sink,
  onSigned?: StreamOptions['onSigned'],
): Promise<void> {
  const { plan } = job;
  const pageCount = Math.ceil(plan.codeLimit / PAGE_SIZE);
  const sha1 = plan.withSha1 ? Buffer.alloc(pageCount * HASH_SIZE.sha1) : NO_HASHES;
  const sha256 = Buffer.alloc(pageCount * HASH_SIZE.sha256);
  // One buffer for every chunk: the sink is done with a chunk when its promise resolves.
  const buffer = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, plan.codeLimit));
  for (let at = 0; at < plan.codeLimit; at += CHUNK_BYTES) {
    const length = Math.min(CHUNK_BYTES, plan.codeLimit - at);
    const chunk = buffer.subarray(0, length);
    // Past the slice's end (a signature added after __LINKEDIT's padding) the code is zeros.
    await codeChunk(read, job, at, chunk);
    const page = at / PAGE_SIZE;
    if (plan.withSha1) hashPages(chunk, 'sha1', sha1, page * HASH_SIZE.sha1);
    hashPages(chunk, 'sha256', sha256, page * HASH_SIZE.sha256);
    await sink(chunk);
  }
  const { signature, cdHash } = plan.finish({ sha1, sha256 });
  job.cdHash = cdHash;
  await onSigned?.({ codeLimit: plan.codeLimit, sha1, sha256 });
  await sink(signature);
}
