/**
 * One parser behind every reader: a fat file read in memory, through a reader, as an entry streams
 * past, or to be signed in memory or streamed gives the same slices or the same refusal.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IpaError } from '../errors.js';
import { loadIdentity } from '../identity.js';
import { createCmsSigner } from '../sign/cms.js';
import { signMachO, type CodeSignInput } from '../sign/macho-sign.js';
import { signMachOStream } from '../sign/macho-sign-stream.js';
import { asArm64e } from '../test-support/macho-bytes.js';
import { createTestPki, type TestPki } from '../test-support/pki.js';
import { PLAIN_MAIN_SOURCE, buildExecutable, buildFat } from '../test-support/toolchain.js';
import { parseMachO, readMachO, type MachOFile } from './parse.js';
import { bufferReader, streamReader } from './reader.js';
import { readSlicesFromStream } from './stream-slices.js';
import { missingTools } from '../test-support/system-tools.js';

/** Outside CI a machine without these skips this file with one line saying so. */
const skip = missingTools('openssl');

const dir = mkdtempSync(join(tmpdir(), 'ipa-reader-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const thinPath = buildExecutable(dir, 'plain', PLAIN_MAIN_SOURCE);
const arm64e = join(dir, 'plain-e');
writeFileSync(arm64e, asArm64e(readFileSync(thinPath)));
const fat = readFileSync(buildFat(dir, 'plain', [thinPath, arm64e]));
let pki: TestPki;
let input: CodeSignInput;
beforeAll(() => {
  pki = createTestPki(dir);
  // A plain dylib's signature: what is signed matters here, not for whom.
  input = {
    identifier: 'com.example.plain',
    isMainBinary: false,
    signer: createCmsSigner(loadIdentity({ p12: pki.p12, password: pki.password })),
    now: new Date('2026-01-02T03:04:05Z'),
  };
});

const streamOf = (bytes: Buffer, chunkBytes: number): Readable =>
  Readable.from(
    (function* () {
      for (let at = 0; at < bytes.length; at += chunkBytes) yield bytes.subarray(at, at + chunkBytes);
    })(),
  );
const slicesOf = (file: MachOFile) => file.slices.map(({ arch, cryptid }) => ({ arch, cryptid }));

/** What a call answered, or the code and sentence of the IpaError it threw. */
async function outcome(call: () => unknown): Promise<unknown> {
  try {
    return await call();
  } catch (err) {
    if (!(err instanceof IpaError)) throw err;
    return { code: err.code, message: err.message };
  }
}

async function signedStreamed(bytes: Buffer): Promise<Buffer> {
  const chunks: Buffer[] = [];
  await signMachOStream(
    async (offset, length) => bytes.subarray(offset, offset + length),
    bytes.length,
    'app',
    input,
    async (chunk) => {
      chunks.push(Buffer.from(chunk));
    },
  );
  return Buffer.concat(chunks);
}

/** The fat file with one byte of its first 64 (the fat header and table) set to a value. */
const damagedFat = fc
  .tuple(fc.integer({ min: 0, max: 63 }), fc.integer({ min: 0, max: 255 }))
  .map(([at, value]) => {
    const copy = Buffer.from(fat);
    copy[at] = value;
    return copy;
  });

describe.skipIf(skip)('the Mach-O parser behind every reader', () => {
  it('gives the same slices or the same refusal in memory, through a reader and as an entry streams past, for any damage to a fat table', async () => {
    await fc.assert(
      fc.asyncProperty(damagedFat, async (bytes) => {
        const inMemory = await outcome(() => slicesOf(parseMachO(bytes, 'app')));
        expect(await outcome(async () => slicesOf(await readMachO(bufferReader(bytes), 'app')))).toEqual(
          inMemory,
        );
        expect(await outcome(() => readSlicesFromStream(streamOf(bytes, 4096), bytes.length, 'app'))).toEqual(
          inMemory,
        );
      }),
      { numRuns: 300 },
    );
  });

  it('signs, or refuses, a damaged fat table alike in memory and streamed', async () => {
    await fc.assert(
      fc.asyncProperty(damagedFat, async (bytes) => {
        expect(await outcome(() => signedStreamed(bytes))).toEqual(
          await outcome(() => signMachO(bytes, 'app', input).bytes),
        );
      }),
      // Each run signs twice with node-forge's RSA in JavaScript: few runs.
      { numRuns: 20 },
    );
  });

  it('refuses a fat slice aligned past what lipo writes, rather than padding the output to it: MACHO_UNSUPPORTED', async () => {
    // fat_arch 2's align (at 8 + 20 + 16) as 2^40.
    const copy = Buffer.from(fat);
    copy.writeUInt32BE(40, 44);
    const refusal = new IpaError(
      'MACHO_UNSUPPORTED',
      'Expected architecture 2 of app to be aligned to at most 2^15 bytes, as lipo aligns them, found 2^40.',
    );
    expect(() => signMachO(copy, 'app', input)).toThrow(refusal);
    await expect(signedStreamed(copy)).rejects.toThrow(refusal);
  });

  it('refuses a fat file whose two architectures share their bytes, to sign it as to check it: MACHO_TRUNCATED', async () => {
    // fat_arch 2 (at 8 + 20) gets fat_arch 1's offset and size (at 8 + 8, 8 + 12).
    const copy = Buffer.from(fat);
    copy.writeUInt32BE(copy.readUInt32BE(16), 36);
    copy.writeUInt32BE(copy.readUInt32BE(20), 40);
    const refusal = new IpaError(
      'MACHO_TRUNCATED',
      `Expected the slices of app not to overlap, found one at ${copy.readUInt32BE(16)}.`,
    );
    expect(() => parseMachO(copy, 'app')).toThrow(refusal);
    expect(() => signMachO(copy, 'app', input)).toThrow(refusal);
    await expect(signedStreamed(copy)).rejects.toThrow(refusal);
    await expect(readSlicesFromStream(streamOf(copy, 4096), copy.length, 'app')).rejects.toThrow(refusal);
  });
});

describe.skipIf(skip)('streamReader', () => {
  const bytes = Buffer.from(Array.from({ length: 100 }, (_, i) => i));

  it('answers any forward reads, within a piece or across pieces, as the bytes are', async () => {
    for (const chunkBytes of [1, 7, 30, 100]) {
      const reader = streamReader(streamOf(bytes, chunkBytes), bytes.length, 'bytes');
      for (const [offset, length] of [
        [0, 8],
        [0, 32],
        [5, 60],
        [5, 3],
        [64, 0],
        [70, 30],
      ] as const) {
        expect(await reader.read(offset, length)).toEqual(bytes.subarray(offset, offset + length));
      }
    }
  });

  it('refuses a stream that ends before the read: MACHO_TRUNCATED', async () => {
    const reader = streamReader(streamOf(bytes.subarray(0, 50), 16), bytes.length, 'bytes');
    await expect(reader.read(40, 20)).rejects.toThrow(
      new IpaError('MACHO_TRUNCATED', 'Expected bytes to hold 100 bytes, found it ends at 50.'),
    );
  });
});
