/**
 * Signs a Mach-O read through a random-access window and written to a sink, so a binary of any
 * size costs a few MiB of memory. The output is byte for byte what signMachO builds in memory:
 * the same plan per slice, the same fat layout, pages hashed as they pass.
 */
import { IpaError } from '../errors.js';
import { FAT_MAGIC, FAT_MAGIC_64, MH_MAGIC, MH_MAGIC_64 } from '../macho/constants.js';
import { fatTableBytes, parseSliceHead } from '../macho/parse.js';
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
  /** Where the signed slice goes in the output (fat files), and its fat_arch entry. */
  outputOffset: number;
  readonly entryAt?: number;
  readonly alignment: number;
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
  if (sizeBytes < 8)
    throw new IpaError(
      'MACHO_TRUNCATED',
      `Expected ${where} to hold a Mach-O header, found ${sizeBytes} bytes.`,
    );
  const first = await read(0, 8);
  const magic = first.readUInt32BE(0);
  if (magic !== FAT_MAGIC && magic !== FAT_MAGIC_64) {
    const le = first.readUInt32LE(0);
    if (le !== MH_MAGIC && le !== MH_MAGIC_64) {
      throw new IpaError(
        'MACHO_BAD_MAGIC',
        `Expected ${where} to start with a Mach-O magic, found 0x${le.toString(16).padStart(8, '0')}.`,
      );
    }
    const job = await planJob(read, 0, sizeBytes, where, input, 0);
    await streamSlice(read, job, sink);
    return { sizeBytes: job.plan.codeLimit + job.plan.signatureSize, cdHash: job.cdHash! };
  }

  // fat_header: magic, nfat_arch; fat_arch (20 bytes) or fat_arch_64 (32 bytes), big-endian
  const is64 = magic === FAT_MAGIC_64;
  const count = first.readUInt32BE(4);
  const entryBytes = is64 ? 32 : 20;
  const headerBytes = fatTableBytes(count, is64, where);
  if (headerBytes > sizeBytes)
    throw new IpaError(
      'MACHO_TRUNCATED',
      `Expected ${where} to hold its fat architecture table, found ${sizeBytes} bytes.`,
    );
  const header = Buffer.from(await read(0, headerBytes));
  const jobs: SliceJob[] = [];
  for (let i = 0; i < count; i++) {
    const at = 8 + i * entryBytes;
    const offset = Number(is64 ? header.readBigUInt64BE(at + 8) : BigInt(header.readUInt32BE(at + 8)));
    const size = Number(is64 ? header.readBigUInt64BE(at + 16) : BigInt(header.readUInt32BE(at + 12)));
    if (offset + size > sizeBytes || offset < headerBytes) {
      throw new IpaError(
        'MACHO_TRUNCATED',
        `Expected architecture ${i + 1} of ${where} to lie within its ${sizeBytes} bytes, found ${offset}+${size}.`,
      );
    }
    const alignment = 2 ** header.readUInt32BE(at + (is64 ? 24 : 16));
    jobs.push({ ...(await planJob(read, offset, size, where, input, alignment)), entryAt: at });
  }
  // The same layout as rebuildMachO: slices in order from the first one's offset, each aligned.
  let cursor = Math.min(...jobs.map((j) => j.offset));
  for (const job of jobs) {
    job.outputOffset = Math.ceil(cursor / job.alignment) * job.alignment;
    const signedSize = job.plan.codeLimit + job.plan.signatureSize;
    if (is64) {
      header.writeBigUInt64BE(BigInt(job.outputOffset), job.entryAt! + 8);
      header.writeBigUInt64BE(BigInt(signedSize), job.entryAt! + 16);
    } else {
      header.writeUInt32BE(job.outputOffset, job.entryAt! + 8);
      header.writeUInt32BE(signedSize, job.entryAt! + 12);
    }
    cursor = job.outputOffset + signedSize;
  }
  await sink(header);
  let written = headerBytes;
  for (const job of jobs) {
    if (job.outputOffset > written) await sink(Buffer.alloc(job.outputOffset - written));
    await streamSlice(read, job, sink);
    written = job.outputOffset + job.plan.codeLimit + job.plan.signatureSize;
  }
  const preferred = jobs.find((j) => j.arch === 'arm64') ?? jobs[0]!;
  return { sizeBytes: written, cdHash: preferred.cdHash! };
}

async function planJob(
  read: ReadAt,
  offset: number,
  size: number,
  where: string,
  input: CodeSignInput,
  alignment: number,
): Promise<SliceJob> {
  // mach_header: sizeofcmds at 20; the plan needs the commands and 16 bytes after them.
  const start = await read(offset, Math.min(size, 32));
  if (start.length < 28)
    throw new IpaError(
      'MACHO_TRUNCATED',
      `Expected ${where} to hold a mach_header, found ${start.length} bytes.`,
    );
  const headerBytes = start.readUInt32LE(0) === MH_MAGIC_64 ? 32 : 28;
  const headLength = Math.min(size, headerBytes + start.readUInt32LE(20) + 16);
  const head = await read(offset, headLength);
  const slice = parseSliceHead(head, size, where);
  return {
    offset,
    size,
    arch: slice.arch,
    plan: planSlice(head, size, slice, where, input),
    outputOffset: offset,
    alignment,
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
