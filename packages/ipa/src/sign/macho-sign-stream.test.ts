import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadIdentity } from '../identity.js';
import { asArm64e } from '../test-support/macho-bytes.js';
import { readFixtureExecutable } from '../test-support/read-fixture.js';
import { createTestPki, type TestPki } from '../test-support/pki.js';
import {
  HELPER_SOURCE,
  MAIN_SOURCE,
  buildDataObject,
  buildDylib,
  buildExecutable,
  buildFat,
} from '../test-support/toolchain.js';
import { opensslVerifies, pageHashesMatch, readSignatures } from '../test-support/verify-signature.js';
import { createCmsSigner } from './cms.js';
import { signMachO, type CodeSignInput } from './macho-sign.js';
import { signMachOStream } from './macho-sign-stream.js';
import { missingTools } from '../test-support/system-tools.js';

/** Outside CI a machine without these skips this file with one line saying so. */
const skip = missingTools('openssl');

const dir = mkdtempSync(join(tmpdir(), 'ipa-stream-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let pki: TestPki;
let helper: string;
let app: Buffer;
let input: CodeSignInput;
beforeAll(() => {
  pki = createTestPki(dir);
  helper = buildDylib(dir, 'helper', HELPER_SOURCE, '@rpath/libhelper.dylib');
  app = readFileSync(buildExecutable(dir, 'app', MAIN_SOURCE, { link: [helper] }));
  input = {
    identifier: 'com.example.app',
    teamId: pki.teamId,
    commonName: pki.commonName,
    entitlements: { 'application-identifier': `${pki.teamId}.com.example.app` },
    infoPlist: Buffer.from('<plist/>'),
    isMainBinary: true,
    signer: createCmsSigner(loadIdentity({ p12: pki.p12, password: pki.password })),
    now: new Date('2026-01-02T03:04:05Z'),
  };
});

async function streamed(bytes: Buffer): Promise<{ bytes: Buffer; cdHash: Buffer; sizeBytes: number }> {
  const chunks: Buffer[] = [];
  const result = await signMachOStream(
    async (offset, length) => bytes.subarray(offset, offset + length),
    bytes.length,
    'app',
    input,
    async (chunk) => {
      chunks.push(Buffer.from(chunk));
    },
  );
  return { bytes: Buffer.concat(chunks), ...result };
}

describe.skipIf(skip)('signMachOStream', () => {
  it('writes what signMachO builds in memory, byte for byte, for a thin binary', async () => {
    const memory = signMachO(app, 'app', input);
    const stream = await streamed(app);
    expect(stream.bytes.equals(memory.bytes)).toBe(true);
    expect(stream.sizeBytes).toBe(memory.bytes.length);
    expect(stream.cdHash).toEqual(memory.cdHash);
  });

  it('does the same for a fat binary and for the Xcode-signed fixture', async () => {
    const e = join(dir, 'app-e');
    writeFileSync(e, asArm64e(app));
    const thin = join(dir, 'app-thin');
    writeFileSync(thin, app);
    for (const bytes of [readFileSync(buildFat(dir, 'app', [thin, e])), await readFixtureExecutable()]) {
      const memory = signMachO(bytes, 'app', input);
      const stream = await streamed(bytes);
      expect(stream.bytes.equals(memory.bytes)).toBe(true);
      for (const signature of readSignatures(stream.bytes)) {
        expect(opensslVerifies(signature, pki.caPem).ok).toBe(true);
        expect(pageHashesMatch(stream.bytes, signature)).toBe(true);
      }
    }
  });

  it('does the same for a binary of several chunks, whose chunks share one buffer', async () => {
    const large = readFileSync(
      buildExecutable(
        dir,
        'large',
        'extern const unsigned char blob[];\nint main(void) { return blob[0]; }\n',
        {
          objects: [buildDataObject(dir, 'blob', randomBytes(9 * 1024 * 1024))],
        },
      ),
    );
    const memory = signMachO(large, 'large', input);
    const stream = await streamed(large);
    expect(stream.bytes.equals(memory.bytes)).toBe(true);
    expect(pageHashesMatch(stream.bytes, readSignatures(stream.bytes)[0]!)).toBe(true);
  });

  it('refuses bytes that are not Mach-O: MACHO_BAD_MAGIC', async () => {
    await expect(streamed(Buffer.from('not a mach-o file'))).rejects.toMatchObject({
      code: 'MACHO_BAD_MAGIC',
    });
  });
});
