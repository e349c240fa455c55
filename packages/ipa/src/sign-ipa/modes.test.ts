import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadIdentity, type SigningIdentity } from '../identity.js';
import { parsePlist, type PlistObject } from '../plist.js';
import { createTestPki, type TestPki } from '../test-support/pki.js';
import { buildDylib, objdumpHeaders } from '../test-support/toolchain.js';
import { opensslVerifies, pageHashesMatch, readSignatures } from '../test-support/verify-signature.js';
import { createMachOSigner } from './engine.js';
import { isSubstrate } from './modes.js';
import { signIpa } from './sign-ipa.js';
import { fixtureIpa } from '../test-support/fixtures.js';
import { missingTools } from '../test-support/system-tools.js';

/** Outside CI a machine without these skips this file with one line saying so. */
const skip = missingTools('openssl', 'unzip', 'llvm-objdump');

const APP = 'Payload/very-capable-app.app';
const OLD_ID = 'org.fastlane.very-capable-app';

describe.skipIf(skip)('sign modes', () => {
  let dir: string;
  let pki: TestPki;
  let identity: SigningIdentity;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'ipa-modes-'));
    pki = createTestPki(dir);
    identity = loadIdentity({ p12: pki.p12, password: pki.password });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const signTo = async (
    name: string,
    extra: Parameters<typeof signIpa>[0] extends infer O ? Partial<O> : never,
  ) => {
    const output = path.join(dir, `${name}.ipa`);
    await signIpa({
      input: fixtureIpa,
      output,
      identity,
      profile: pki.profile(),
      signer: createMachOSigner(identity),
      ...extra,
    });
    const target = path.join(dir, name);
    mkdirSync(target);
    execFileSync('unzip', ['-q', output, '-d', target]);
    return path.join(target, APP);
  };

  it('DUP: gives the app the new identifier and leaves nothing of the old one', async () => {
    const app = await signTo('dup', { mode: 4, bundleIdPrefix: 'com.example.copy' });
    const info = parsePlist(readFileSync(path.join(app, 'Info.plist'))) as PlistObject;
    expect(info.CFBundleIdentifier).toBe('com.example.copy');
    const [signature] = readSignatures(readFileSync(path.join(app, 'very-capable-app')));
    expect(signature!.codeDirectories.map((cd) => cd.identifier)).toEqual(['com.example.copy']);
    const entitlements = parsePlist(Buffer.from(signature!.entitlementsXml!)) as PlistObject;
    expect(entitlements['application-identifier']).toBe(`${pki.teamId}.com.example.copy`);
    expect(opensslVerifies(signature!, pki.caPem).ok).toBe(true);
    expect(pageHashesMatch(readFileSync(path.join(app, 'very-capable-app')), signature!)).toBe(true);
    // Nothing in the plist, the signature's identifiers or the entitlements names the original.
    const strings: string[] = [];
    const collect = (v: unknown) =>
      typeof v === 'string'
        ? strings.push(v)
        : v && typeof v === 'object'
          ? Object.values(v).forEach(collect)
          : undefined;
    collect(info);
    collect(entitlements);
    expect(strings.filter((s) => s.includes(OLD_ID))).toEqual([]);
    expect(signature!.entitlementsXml).not.toContain(OLD_ID);
  });

  it("DUP: refuses the app's own identifier, which would not install beside the original", async () => {
    const output = path.join(dir, 'same-id.ipa');
    await expect(
      signIpa({
        input: fixtureIpa,
        output,
        identity,
        profile: pki.profile(),
        signer: createMachOSigner(identity),
        mode: 4,
        bundleIdPrefix: OLD_ID,
      }),
    ).rejects.toThrow(`Mode 4 (DUP) needs a bundle id other than the app's own, found '${OLD_ID}'.`);
    expect(() => readFileSync(output)).toThrow();
  });

  it('IAP: injects the operator dylib with a load command and signs it too', async () => {
    const dylibPath = buildDylib(
      dir,
      'tweak',
      'int tweak_entry(void) { return 7; }\n',
      '@rpath/libtweak.dylib',
    );
    const app = await signTo('inject', {
      mode: 1,
      inject: [{ name: 'libtweak.dylib', bytes: readFileSync(dylibPath) }],
    });
    const executable = path.join(app, 'very-capable-app');
    const headers = objdumpHeaders(executable);
    expect(headers).toMatch(/cmd LC_LOAD_DYLIB[\s\S]*?name @executable_path\/Frameworks\/libtweak\.dylib/);
    expect(headers).toContain('LC_CODE_SIGNATURE');
    const injected = readFileSync(path.join(app, 'Frameworks/libtweak.dylib'));
    for (const file of [readFileSync(executable), injected]) {
      for (const signature of readSignatures(file)) {
        expect(opensslVerifies(signature, pki.caPem).ok).toBe(true);
        expect(pageHashesMatch(file, signature)).toBe(true);
      }
    }
    // The dylib is plain code: no entitlements; the app seals it by cdhash.
    expect(readSignatures(injected)[0]!.entitlementsXml).toBeUndefined();
    const seal = parsePlist(readFileSync(path.join(app, '_CodeSignature/CodeResources'))) as {
      files2: Record<string, PlistObject>;
    };
    expect(seal.files2['Frameworks/libtweak.dylib']).toMatchObject({ cdhash: expect.any(Uint8Array) });
  });

  it('refuses a mode without what it needs, before writing anything', async () => {
    const output = path.join(dir, 'refused.ipa');
    const base = {
      input: fixtureIpa,
      output,
      identity,
      profile: pki.profile(),
      signer: createMachOSigner(identity),
    };
    await expect(signIpa({ ...base, mode: 2 })).rejects.toMatchObject({ code: 'DYLIB_MISSING' });
    await expect(
      signIpa({ ...base, mode: 0, inject: [{ name: 'libx.dylib', bytes: Buffer.alloc(4) }] }),
    ).rejects.toThrow(
      'Mode 0 injects nothing, found 1 dylib(s) to inject: choose mode 1, 2 or 3, or leave them out.',
    );
    await expect(signIpa({ ...base, mode: 4, bundleIdPrefix: 'bad prefix!' })).rejects.toMatchObject({
      code: 'BUNDLE_ID_INVALID',
    });
    await expect(
      signIpa({ ...base, mode: 1, inject: [{ name: '../evil.dylib', bytes: Buffer.alloc(4) }] }),
    ).rejects.toMatchObject({ code: 'DYLIB_MISSING' });
    expect(() => readFileSync(output)).toThrow();
  });
});

describe.skipIf(skip)('isSubstrate', () => {
  // The union of the two checks signing and the sign service each made before: any name holding
  // CydiaSubstrate or ending in libsubstrate.dylib, or a last component that is libsubstrate.dylib
  // or starts with CydiaSubstrate.
  it.each([
    '/Library/Frameworks/CydiaSubstrate.framework/CydiaSubstrate',
    '@rpath/CydiaSubstrate.framework/CydiaSubstrate',
    '/usr/lib/libsubstrate.dylib',
    'libsubstrate.dylib',
    'CydiaSubstrate.dylib',
    'libCydiaSubstrate.dylib',
    'ellekit-libsubstrate.dylib',
    '/opt/dylibs/libsubstrate.dylib/',
  ])('takes %s for CydiaSubstrate', (name) => {
    expect(isSubstrate(name)).toBe(true);
  });

  it.each([
    'libiap.dylib',
    '@rpath/libigg.dylib',
    'substrate.dylib',
    'libsubstrate.dylib.bak',
    'cydiasubstrate.dylib',
    '/usr/lib/libsubstrate_dylib',
  ])('takes %s for a dylib of its own', (name) => {
    expect(isSubstrate(name)).toBe(false);
  });
});
