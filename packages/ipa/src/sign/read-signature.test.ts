import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadIdentity } from '../identity.js';
import { asArm64e } from '../test-support/macho-bytes.js';
import { createTestPki, type TestPki } from '../test-support/pki.js';
import { PLAIN_MAIN_SOURCE, buildExecutable, buildFat } from '../test-support/toolchain.js';
import { createCmsSigner } from './cms.js';
import { signMachO } from './macho-sign.js';
import { readEmbeddedEntitlements, readEmbeddedEntitlementsAt } from './read-signature.js';
import { missingTools } from '../test-support/system-tools.js';

/** Outside CI a machine without these skips this file with one line saying so. */
const skip = missingTools('openssl');

const dir = mkdtempSync(join(tmpdir(), 'ipa-read-signature-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let pki: TestPki;
beforeAll(() => {
  pki = createTestPki(dir);
});

describe.skipIf(skip)('readEmbeddedEntitlementsAt', () => {
  it('reads the first signed slice of a fat file whose first slice is unsigned, as readEmbeddedEntitlements does', async () => {
    const unsigned = buildExecutable(dir, 'plain', PLAIN_MAIN_SOURCE);
    const entitlements = {
      'application-identifier': `${pki.teamId}.com.example.plain`,
      'get-task-allow': true,
    };
    const signed = signMachO(asArm64e(readFileSync(unsigned)), 'plain', {
      identifier: 'com.example.plain',
      teamId: pki.teamId,
      commonName: pki.commonName,
      entitlements,
      isMainBinary: true,
      signer: createCmsSigner(loadIdentity({ p12: pki.p12, password: pki.password })),
      now: new Date('2026-01-02T03:04:05Z'),
    });
    writeFileSync(join(dir, 'signed-e'), signed.bytes);
    const fat = readFileSync(buildFat(dir, 'mixed', [unsigned, join(dir, 'signed-e')]));

    expect(readEmbeddedEntitlements(fat, 'plain')).toEqual(entitlements);
    // What a binary too large to hold is read through: a window that answers ranges.
    expect(
      await readEmbeddedEntitlementsAt(
        async (offset, length) => fat.subarray(offset, offset + length),
        fat.length,
        'plain',
      ),
    ).toEqual(entitlements);
  });
});
