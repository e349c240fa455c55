/**
 * Signing refuses what check() refuses (archives whose entries share bytes, code that is still
 * encrypted however it is named), and never writes more than its input's size and what signing
 * adds; each refusal leaves no output behind.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IpaError } from '../errors.js';
import { buildZip, withSharedRecord, type TestZipEntry } from '../test-support/build-zip.js';
import { fixtureExecutablePath } from '../test-support/fixtures.js';
import { withCryptid, withExtraEncryptionCommand } from '../test-support/macho-bytes.js';
import { createTestPki, type TestPki } from '../test-support/pki.js';
import { readFixtureEntries } from '../test-support/read-fixture.js';
import { buildDataObject, buildExecutable, PLAIN_MAIN_SOURCE } from '../test-support/toolchain.js';
import { sign } from './sign.js';
import { warmDigestCache } from './warm.js';
import { missingTools } from '../test-support/system-tools.js';

/** Outside CI a machine without these skips this file with one line saying so. */
const skip = missingTools('openssl');

const APP = 'Payload/very-capable-app.app';

let dir: string;
let pki: TestPki;
let entries: TestZipEntry[];
let plain: Buffer;
let runs = 0;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'ipa-sign-hostile-'));
  pki = createTestPki(dir);
  entries = (await readFixtureEntries()).map((entry) => ({
    ...entry,
    method: entry.name.endsWith('/') ? 0 : 8,
  }));
  plain = readFileSync(buildExecutable(dir, 'plain', PLAIN_MAIN_SOURCE));
}, 180_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The fixture app with entries replaced or added. */
function variant(changes: Record<string, TestZipEntry>): TestZipEntry[] {
  const result = entries.map((entry) => changes[entry.name] ?? entry);
  for (const [name, entry] of Object.entries(changes))
    if (!entries.some((e) => e.name === name)) result.push(entry);
  return result;
}

/** Signs `bytes` as an IPA into a folder of its own; answers the error and what the folder holds after. */
async function signRefusal(bytes: Buffer, cacheDir?: string): Promise<{ error: unknown; left: string[] }> {
  const out = path.join(dir, `out-${runs++}`);
  mkdirSync(out);
  const input = path.join(dir, `in-${runs}.ipa`);
  writeFileSync(input, bytes);
  if (cacheDir !== undefined) await warmDigestCache(input, { cacheDir });
  const error = await sign({
    input,
    output: path.join(out, 'signed.ipa'),
    identity: { p12: pki.p12, password: pki.password },
    profile: pki.profile(),
    ...(cacheDir === undefined ? {} : { cacheDir }),
  }).then(
    () => undefined,
    (err: unknown) => err,
  );
  return { error, left: readdirSync(out) };
}

describe.skipIf(skip)('signing hostile archives', () => {
  it('refuses an IPA whose entries share one record, writing nothing: ZIP_OVERLAP', async () => {
    // The probe's shape: more central entries over one record, each copied on signing.
    const { error, left } = await signRefusal(withSharedRecord(buildZip(entries), 100));
    expect(error).toBeInstanceOf(IpaError);
    expect((error as IpaError).code).toBe('ZIP_OVERLAP');
    expect(left).toEqual([]);
  });

  const hidden: Array<[string, () => Record<string, TestZipEntry>, string]> = [
    [
      'an encrypted Mach-O named Hidden.dat with mode 0644',
      () => ({
        [`${APP}/Frameworks/Hidden.framework/Hidden.dat`]: {
          name: `${APP}/Frameworks/Hidden.framework/Hidden.dat`,
          data: withCryptid(plain, 1),
          mode: 0o100644,
        },
      }),
      `${APP}/Frameworks/Hidden.framework/Hidden.dat`,
    ],
    [
      'an encrypted Mach-O with no Unix mode',
      () => ({
        [`${APP}/PlugIns/Ext.appex/Ext.bin`]: {
          name: `${APP}/PlugIns/Ext.appex/Ext.bin`,
          data: withCryptid(plain, 1),
          mode: 0,
        },
      }),
      `${APP}/PlugIns/Ext.appex/Ext.bin`,
    ],
    [
      'an encrypted Mach-O outside the app bundle',
      () => ({
        'Payload/Stray/stray': { name: 'Payload/Stray/stray', data: withCryptid(plain, 1), mode: 0o100755 },
      }),
      'Payload/Stray/stray',
    ],
    [
      'a main executable whose first encryption command says 1 and the last 0',
      () => ({
        [fixtureExecutablePath]: {
          name: fixtureExecutablePath,
          data: withExtraEncryptionCommand(withCryptid(plain, 1), 0),
          mode: 0o100755,
        },
      }),
      fixtureExecutablePath,
    ],
  ];
  for (const cached of [false, true]) {
    it.each(hidden)(
      `refuses ${cached ? 'from cached digests ' : ''}%s, writing nothing: MACHO_ENCRYPTED`,
      async (_, changes, where) => {
        const { error, left } = await signRefusal(
          buildZip(variant(changes())),
          cached ? path.join(dir, `cache-${runs}`) : undefined,
        );
        expect(error).toEqual(
          new IpaError(
            'MACHO_ENCRYPTED',
            `Expected ${where} (arm64) to be decrypted (cryptid 0), found cryptid 1: decrypt the version first.`,
          ),
        );
        expect(left).toEqual([]);
      },
    );
  }

  it('signs an app carrying a decrypted Mach-O under any name', async () => {
    const name = `${APP}/Frameworks/Hidden.framework/Hidden.dat`;
    const { error, left } = await signRefusal(
      buildZip(variant({ [name]: { name, data: plain, mode: 0o100644 } })),
    );
    expect(error).toBeUndefined();
    expect(left).toEqual(['signed.ipa']);
  });

  it('refuses to write more than its input and what signing adds, writing nothing: SIGNED_IPA_TOO_LARGE', async () => {
    // 16 MiB of a pattern that deflate level 9 stores in some 100 KB and level 1 (signing's) in
    // some 2.6 MB: the signed IPA would be many times the size of the one uploaded.
    const pattern = Buffer.alloc(16 * 1024 * 1024);
    for (let i = 0; i < pattern.length; i++) pattern[i] = (i * 7 + (i >> 5)) & 0xff;
    const source = 'extern const unsigned char blob[];\nint main(void) { return blob[0]; }\n';
    const binary = readFileSync(
      buildExecutable(dir, 'patterned', source, { objects: [buildDataObject(dir, 'pattern', pattern)] }),
    );
    const bytes = buildZip(
      variant({
        [fixtureExecutablePath]: { name: fixtureExecutablePath, data: binary, mode: 0o100755, level: 9 },
      }),
    );
    const { error, left } = await signRefusal(bytes);
    expect(error).toBeInstanceOf(IpaError);
    expect((error as IpaError).code).toBe('SIGNED_IPA_TOO_LARGE');
    expect((error as IpaError).message).toMatch(
      /^Expected the signed IPA to stay within \d+ bytes \(its input's size and what signing adds\), found it reaching \d+ bytes\.$/,
    );
    expect(left).toEqual([]);
  }, 180_000);
});
