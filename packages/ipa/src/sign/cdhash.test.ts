import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IpaError } from '../errors.js';
import { parseMachO } from '../macho/parse.js';
import { codeDirectoryHashes } from './cdhash.js';
import { fixtureIpa } from '../test-support/fixtures.js';
import { missingTools } from '../test-support/system-tools.js';

/** Outside CI a machine without these skips this file with one line saying so. */
const skip = missingTools('unzip');

const executablePath = 'Payload/very-capable-app.app/very-capable-app';
const dir = mkdtempSync(join(tmpdir(), 'ipa-cdhash-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let executable: Buffer;
let signatureAt: number;
beforeAll(() => {
  execFileSync('unzip', ['-q', fixtureIpa, executablePath, '-d', dir]);
  executable = readFileSync(join(dir, executablePath));
  signatureAt = parseMachO(executable).slices[0]!.codeSignature!.dataOffset;
});

describe.skipIf(skip)('codeDirectoryHashes', () => {
  it('gives an IpaError or hashes for any corruption of the SuperBlob and CodeDirectory headers, never a crash', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 160 }), fc.integer({ min: 0, max: 255 }), (at, value) => {
        const copy = Buffer.from(executable);
        copy[signatureAt + at] = value;
        try {
          for (const slice of codeDirectoryHashes(copy))
            expect(slice.codeDirectories.every((cd) => cd.cdhash.length === 20)).toBe(true);
        } catch (err) {
          expect(err).toBeInstanceOf(IpaError);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('refuses a CodeDirectory slot that holds another blob: SIGNATURE_INVALID', () => {
    const copy = Buffer.from(executable);
    // SuperBlob: magic, length, count, then BlobIndex { type, offset }: point slot 0 at the requirements blob (index 1).
    copy.writeUInt32BE(copy.readUInt32BE(signatureAt + 12 + 8 + 4), signatureAt + 12 + 4);
    expect(() => codeDirectoryHashes(copy)).toThrow(expect.objectContaining({ code: 'SIGNATURE_INVALID' }));
  });
});
