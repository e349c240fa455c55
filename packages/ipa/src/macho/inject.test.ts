import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadIdentity } from '../identity.js';
import { createCmsSigner } from '../sign/cms.js';
import { signMachO } from '../sign/macho-sign.js';
import { asArm64e } from '../test-support/macho-bytes.js';
import { createTestPki } from '../test-support/pki.js';
import {
  HELPER_SOURCE,
  MAIN_SOURCE,
  PLAIN_MAIN_SOURCE,
  buildDylib,
  buildExecutable,
  buildFat,
  objdumpHeaders,
} from '../test-support/toolchain.js';
import { opensslVerifies, pageHashesMatch, readSignatures } from '../test-support/verify-signature.js';
import { addDylibLoad, rewriteDylibPath } from './inject.js';
import { parseMachO } from './parse.js';
import { missingTools } from '../test-support/system-tools.js';

/** Outside CI a machine without these skips this file with one line saying so. */
const skip = missingTools('openssl', 'llvm-objdump');

const dir = mkdtempSync(join(tmpdir(), 'ipa-inject-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const helper = buildDylib(dir, 'helper', HELPER_SOURCE, '@rpath/libhelper.dylib');
const app = readFileSync(buildExecutable(dir, 'app', MAIN_SOURCE, { link: [helper] }));
const tight = readFileSync(buildExecutable(dir, 'tight', PLAIN_MAIN_SOURCE, { headerPadBytes: 0 }));
const TWEAK = '@executable_path/Frameworks/libtweak.dylib';

function headersOf(bytes: Buffer, name: string): string {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return objdumpHeaders(path);
}

describe.skipIf(skip)('addDylibLoad', () => {
  it('adds LC_LOAD_DYLIB that llvm-objdump reads, keeping every segment as it was', () => {
    const injected = addDylibLoad(app, 'app', { path: TWEAK });
    const headers = headersOf(injected, 'injected');
    expect(headers).toMatch(
      new RegExp(`cmd LC_LOAD_DYLIB\\s+cmdsize \\d+\\s+name ${TWEAK.replace(/[.$]/g, '\\$&')}`),
    );
    const before = parseMachO(app).slices[0]!;
    const after = parseMachO(injected).slices[0]!;
    expect(after.segments.map((s) => [s.name, s.fileOffset, s.fileSize])).toEqual(
      before.segments.map((s) => [s.name, s.fileOffset, s.fileSize]),
    );
    expect(after.dylibs.map((d) => d.name)).toEqual([...before.dylibs.map((d) => d.name), TWEAK]);
    expect(injected.subarray(0x4000).equals(app.subarray(0x4000))).toBe(true);
  });

  it('adds a weak load when asked', () => {
    expect(
      headersOf(addDylibLoad(app, 'app', { path: '@rpath/libweak.dylib', weak: true }), 'weak'),
    ).toContain('LC_LOAD_WEAK_DYLIB');
  });

  it('does not add the same dylib twice', () => {
    const once = addDylibLoad(app, 'app', { path: TWEAK });
    expect(addDylibLoad(once, 'app', { path: TWEAK }).equals(once)).toBe(true);
  });

  it('injects into every slice of a fat binary, which then signs and verifies', () => {
    const e = join(dir, 'app-e');
    writeFileSync(e, asArm64e(app));
    const thin = join(dir, 'app-thin');
    writeFileSync(thin, app);
    const fat = readFileSync(buildFat(dir, 'app', [thin, e]));
    const injected = addDylibLoad(fat, 'app', { path: TWEAK });
    expect(parseMachO(injected).slices.map((s) => s.dylibs.at(-1)!.name)).toEqual([TWEAK, TWEAK]);
    const pki = createTestPki(mkdtempSync(join(dir, 'pki-')));
    const signed = signMachO(injected, 'app', {
      identifier: 'com.example.app',
      teamId: pki.teamId,
      commonName: pki.commonName,
      isMainBinary: true,
      signer: createCmsSigner(loadIdentity({ p12: pki.p12, password: pki.password })),
      now: new Date(),
    }).bytes;
    for (const signature of readSignatures(signed)) {
      expect(opensslVerifies(signature, pki.caPem).ok).toBe(true);
      expect(pageHashesMatch(signed, signature)).toBe(true);
    }
    expect(headersOf(signed, 'fat-signed')).toContain(TWEAK);
  });

  it('refuses when the load commands have no room left, leaving the binary as it was: LOAD_COMMANDS_FULL', () => {
    const copy = Buffer.from(tight);
    const longPath = `@executable_path/Frameworks/${'x'.repeat(20_000)}.dylib`;
    expect(() => addDylibLoad(copy, 'tight', { path: longPath })).toThrow(
      expect.objectContaining({ code: 'LOAD_COMMANDS_FULL' }),
    );
    expect(copy.equals(tight)).toBe(true);
  });
});

describe.skipIf(skip)('rewriteDylibPath', () => {
  it('points a CydiaSubstrate dependency at the bundled copy', () => {
    const substrateUser = readFileSync(
      buildDylib(
        dir,
        'user',
        'int helper(int);\nint tweak(void) { return helper(1); }\n',
        '@rpath/libuser.dylib',
        {
          link: [
            buildDylib(
              dir,
              'substrate',
              HELPER_SOURCE,
              '/Library/Frameworks/CydiaSubstrate.framework/CydiaSubstrate',
            ),
          ],
        },
      ),
    );
    const { bytes, rewritten } = rewriteDylibPath(
      substrateUser,
      'libuser',
      (name) => name.includes('CydiaSubstrate'),
      '@executable_path/Frameworks/libsubstrate.dylib',
    );
    expect(rewritten).toBe(1);
    const headers = headersOf(bytes, 'rewritten');
    expect(headers).toContain('@executable_path/Frameworks/libsubstrate.dylib');
    expect(headers).not.toContain('CydiaSubstrate');
  });

  it('refuses a path longer than the command holds: LOAD_COMMANDS_FULL', () => {
    expect(() =>
      rewriteDylibPath(
        app,
        'app',
        (name) => name === '@rpath/libhelper.dylib',
        `@executable_path/${'y'.repeat(200)}`,
      ),
    ).toThrow(expect.objectContaining({ code: 'LOAD_COMMANDS_FULL' }));
  });
});
