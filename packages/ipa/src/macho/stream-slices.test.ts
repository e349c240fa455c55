import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { IpaError } from '../errors.js';
import { asArm64e, withCryptid } from '../test-support/macho-bytes.js';
import { readFixtureExecutable } from '../test-support/read-fixture.js';
import { PLAIN_MAIN_SOURCE, buildExecutable, buildFat } from '../test-support/toolchain.js';
import { parseMachO } from './parse.js';
import { readSlicesFromStream } from './stream-slices.js';

const dir = mkdtempSync(join(tmpdir(), 'ipa-stream-slices-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const thinPath = buildExecutable(dir, 'plain', PLAIN_MAIN_SOURCE);
const thin = readFileSync(thinPath);
const encryptedE = join(dir, 'plain-e');
writeFileSync(encryptedE, asArm64e(withCryptid(thin, 1)));
const fat = readFileSync(buildFat(dir, 'plain', [thinPath, encryptedE]));

/** The bytes as a stream of `chunkBytes`-sized chunks, as an inflating zip entry gives them. */
const streamOf = (bytes: Buffer, chunkBytes: number): Readable =>
  Readable.from(
    (function* () {
      for (let at = 0; at < bytes.length; at += chunkBytes) yield bytes.subarray(at, at + chunkBytes);
    })(),
  );
const expected = (bytes: Buffer) => parseMachO(bytes).slices.map(({ arch, cryptid }) => ({ arch, cryptid }));

describe('readSlicesFromStream', () => {
  it('reads what parseMachO reads, thin and fat, whatever the chunking', async () => {
    for (const bytes of [thin, fat, await readFixtureExecutable()]) {
      for (const chunkBytes of [7, 4096, 1 << 20]) {
        expect(await readSlicesFromStream(streamOf(bytes, chunkBytes), bytes.length, 'app')).toEqual(
          expected(bytes),
        );
      }
    }
    expect(await readSlicesFromStream(streamOf(fat, 4096), fat.length, 'app')).toEqual([
      { arch: 'arm64', cryptid: 0 },
      { arch: 'arm64e', cryptid: 1 },
    ]);
  });

  it('refuses a binary whose stream ends inside its first 256 KiB, load commands whole or not: MACHO_TRUNCATED', async () => {
    const cut = thin.subarray(0, 20_000);
    await expect(readSlicesFromStream(streamOf(cut, 4096), thin.length, 'app')).rejects.toThrow(
      new IpaError('MACHO_TRUNCATED', `Expected app to hold ${thin.length} bytes, found it ends at 20000.`),
    );
  });

  it('refuses a stream that ends early: MACHO_TRUNCATED', async () => {
    await expect(
      readSlicesFromStream(streamOf(fat.subarray(0, 0x4010), 4096), fat.length, 'app'),
    ).rejects.toMatchObject({ code: 'MACHO_TRUNCATED' });
  });

  it("gives an IpaError or parseMachO's answer for any corruption of the fat table, never a crash", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 63 }),
        fc.integer({ min: 0, max: 255 }),
        async (at, value) => {
          const copy = Buffer.from(fat);
          copy[at] = value;
          let streamed: unknown;
          try {
            streamed = await readSlicesFromStream(streamOf(copy, 65536), copy.length, 'app');
          } catch (err) {
            expect(err).toBeInstanceOf(IpaError);
            return;
          }
          expect(streamed).toEqual(expected(copy));
        },
      ),
      { numRuns: 200 },
    );
  });
});
