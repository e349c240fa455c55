import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePlist, type PlistObject } from '../plist.js';
import { fixtureIpa } from '../test-support/fixtures.js';
import { createTestPki, type TestPki } from '../test-support/pki.js';
import { HELPER_SOURCE, buildDylib, objdumpHeaders } from '../test-support/toolchain.js';
import { opensslVerifies, pageHashesMatch, readSignatures } from '../test-support/verify-signature.js';
import { dylibsForMode } from './mode-needs.js';
import { sign } from './sign.js';
import { missingTools } from '../test-support/system-tools.js';

/** Outside CI a machine without these skips this file with one line saying so. */
const skip = missingTools('openssl', 'unzip', 'llvm-objdump');

const dir = mkdtempSync(path.join(tmpdir(), 'ipa-sign-api-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let pki: TestPki;
beforeAll(() => {
  pki = createTestPki(dir);
});
const APP = 'Payload/very-capable-app.app';
const iap = {
  name: 'libiap.dylib',
  bytes: readFileSync(buildDylib(dir, 'iap', 'int iap(void) { return 1; }\n', '@rpath/libiap.dylib')),
};
const igg = {
  name: 'libigg.dylib',
  bytes: readFileSync(buildDylib(dir, 'igg', 'int igg(void) { return 2; }\n', '@rpath/libigg.dylib')),
  weak: true,
};

function unzip(ipa: string): string {
  const target = `${ipa}.d`;
  mkdirSync(target);
  execFileSync('unzip', ['-q', ipa, '-d', target]);
  return path.join(target, APP);
}

describe.skipIf(skip)('sign', () => {
  it('signs with a PKCS#12 identity in mode 0, and a second time from the resource cache', async () => {
    const cacheDir = path.join(dir, 'cache');
    for (const name of ['first', 'second']) {
      const output = path.join(dir, `${name}.ipa`);
      await sign({
        input: fixtureIpa,
        output,
        identity: { p12: pki.p12, password: pki.password },
        profile: pki.profile(),
        cacheDir,
      });
      const binary = readFileSync(path.join(unzip(output), 'very-capable-app'));
      const [signature] = readSignatures(binary);
      expect(opensslVerifies(signature!, pki.caPem).ok).toBe(true);
      expect(pageHashesMatch(binary, signature!)).toBe(true);
    }
    expect(readdirSync(path.join(cacheDir, 'resource-digests'))).toHaveLength(1);
  });

  it("keeps the Xcode app's own entitlements that the profile grants, on the profile's team, and drops the rest", async () => {
    const output = path.join(dir, 'entitlements.ipa');
    const profile = pki.profile({
      entitlements: {
        'com.apple.developer.associated-domains': '*',
        'com.apple.developer.icloud-container-identifiers': [
          'iCloud.org.fastlane.very-capable-app',
          'iCloud.other',
        ],
        'com.apple.developer.healthkit': true,
        'com.apple.developer.ubiquity-kvstore-identifier': `${pki.teamId}.*`,
      },
    });
    await sign({ input: fixtureIpa, output, identity: { p12: pki.p12, password: pki.password }, profile });
    const [signature] = readSignatures(readFileSync(path.join(unzip(output), 'very-capable-app')));
    const entitlements = parsePlist(Buffer.from(signature!.entitlementsXml!)) as PlistObject;
    expect(entitlements).toMatchObject({
      'application-identifier': `${pki.teamId}.org.fastlane.very-capable-app`,
      'com.apple.developer.team-identifier': pki.teamId,
      'com.apple.developer.associated-domains': ['webcredentials:example.com'],
      'com.apple.developer.icloud-container-identifiers': ['iCloud.org.fastlane.very-capable-app'],
      'com.apple.developer.healthkit': true,
      'com.apple.developer.ubiquity-kvstore-identifier': `${pki.teamId}.org.fastlane.very-capable-app`,
      'keychain-access-groups': [`${pki.teamId}.org.fastlane.very-capable-app`],
    });
    // The fixture claims HomeKit and Siri; this profile grants neither, so iOS would refuse them.
    expect(entitlements).not.toHaveProperty('com.apple.developer.homekit');
    expect(entitlements).not.toHaveProperty('com.apple.developer.siri');
    expect(JSON.stringify(entitlements)).not.toContain('TestFixture');
  });

  it('signs with a PEM certificate and key', async () => {
    const output = path.join(dir, 'pem.ipa');
    const report = await sign({
      input: fixtureIpa,
      output,
      identity: { certPem: pki.certPem, keyPem: pki.keyPem, chain: [Buffer.from(pki.caPem)] },
      profile: pki.profile(),
    });
    expect(report.bundles.map((b) => b.bundleId)).toEqual(['org.fastlane.very-capable-app']);
  });

  it('mode 3 injects the IAP and IGG dylibs named for it, the IGG one weakly', async () => {
    const output = path.join(dir, 'mode3.ipa');
    await sign({
      input: fixtureIpa,
      output,
      identity: { p12: pki.p12, password: pki.password },
      profile: pki.profile(),
      mode: 3,
      dylibs: { iap, igg },
    });
    const app = unzip(output);
    const headers = objdumpHeaders(path.join(app, 'very-capable-app'));
    expect(headers).toMatch(
      /cmd LC_LOAD_DYLIB\s+cmdsize \d+\s+name @executable_path\/Frameworks\/libiap\.dylib/,
    );
    expect(headers).toMatch(
      /cmd LC_LOAD_WEAK_DYLIB\s+cmdsize \d+\s+name @executable_path\/Frameworks\/libigg\.dylib/,
    );
    const seal = parsePlist(readFileSync(path.join(app, '_CodeSignature/CodeResources'))) as {
      files2: Record<string, PlistObject>;
    };
    expect(Object.keys(seal.files2)).toEqual(
      expect.arrayContaining(['Frameworks/libiap.dylib', 'Frameworks/libigg.dylib']),
    );
  });

  it('bundles the substrate beside an injected dylib that needs CydiaSubstrate, and points it there', async () => {
    const substratePath = buildDylib(
      dir,
      'substrate',
      HELPER_SOURCE,
      '/Library/Frameworks/CydiaSubstrate.framework/CydiaSubstrate',
    );
    const substrate = { name: 'libsubstrate.dylib', bytes: readFileSync(substratePath) };
    const user = {
      name: 'libuser.dylib',
      bytes: readFileSync(
        buildDylib(
          dir,
          'user',
          'int helper(int);\nint tweak(void) { return helper(1); }\n',
          '@rpath/libuser.dylib',
          {
            link: [substratePath],
          },
        ),
      ),
    };
    expect(user.bytes.includes('CydiaSubstrate.framework/CydiaSubstrate')).toBe(true);
    const output = path.join(dir, 'substrate.ipa');
    await sign({
      input: fixtureIpa,
      output,
      identity: { p12: pki.p12, password: pki.password },
      profile: pki.profile(),
      mode: 1,
      dylibs: { iap: user, substrate },
    });
    const app = unzip(output);
    const userHeaders = objdumpHeaders(path.join(app, 'Frameworks/libuser.dylib'));
    expect(userHeaders).toContain('name @executable_path/Frameworks/libsubstrate.dylib');
    expect(userHeaders).not.toContain('CydiaSubstrate.framework');
    // The app loads the injected dylib only; the substrate comes in as its dependency.
    const loads = [
      ...objdumpHeaders(path.join(app, 'very-capable-app')).matchAll(
        /name @executable_path\/Frameworks\/(\S+)/g,
      ),
    ].map((m) => m[1]);
    expect(loads).toEqual(['libuser.dylib']);
    const seal = parsePlist(readFileSync(path.join(app, '_CodeSignature/CodeResources'))) as {
      files2: Record<string, PlistObject>;
    };
    for (const name of ['libuser.dylib', 'libsubstrate.dylib']) {
      const bytes = readFileSync(path.join(app, 'Frameworks', name));
      const [signature] = readSignatures(bytes);
      expect(opensslVerifies(signature!, pki.caPem).ok, name).toBe(true);
      expect(pageHashesMatch(bytes, signature!), name).toBe(true);
      expect(signature!.entitlementsXml, name).toBeUndefined();
      expect(seal.files2[`Frameworks/${name}`], name).toMatchObject({ cdhash: expect.any(Uint8Array) });
    }
  });

  it('refuses a mode whose dylib is not configured, naming it: DYLIB_MISSING', async () => {
    const output = path.join(dir, 'refused.ipa');
    await expect(
      sign({
        input: fixtureIpa,
        output,
        identity: { p12: pki.p12, password: pki.password },
        profile: pki.profile(),
        mode: 3,
        dylibs: { iap },
      }),
    ).rejects.toMatchObject({
      code: 'DYLIB_MISSING',
      message: 'Expected the IGG dylib for mode 3, found none configured.',
    });
    expect(readdirSync(dir).filter((name) => name.startsWith('refused'))).toEqual([]);
  });

  it('takes each kind as a list of paths: the mode picks its own, and bundles a CydiaSubstrate among them without a load command', async () => {
    // Named as only one of the two earlier substrate checks knew it: any name holding CydiaSubstrate.
    const substrate = path.join(dir, 'libCydiaSubstrate.dylib');
    copyFileSync(
      buildDylib(dir, 'cydia', HELPER_SOURCE, '/Library/Frameworks/CydiaSubstrate.framework/CydiaSubstrate'),
      substrate,
    );
    const tweak = path.join(dir, 'libtweak.dylib');
    copyFileSync(
      buildDylib(
        dir,
        'tweak',
        'int helper(int);\nint tweak(void) { return helper(2); }\n',
        '@rpath/libtweak.dylib',
        { link: [substrate] },
      ),
      tweak,
    );
    const game = path.join(dir, 'libgame.dylib');
    copyFileSync(buildDylib(dir, 'game', 'int game(void) { return 3; }\n', '@rpath/libgame.dylib'), game);
    const output = path.join(dir, 'lists.ipa');
    const dylibs = { iap: [tweak, substrate], igg: [game] };
    await sign({
      input: fixtureIpa,
      output,
      identity: { p12: pki.p12, password: pki.password },
      profile: pki.profile(),
      mode: 3,
      dylibs,
    });
    const app = unzip(output);
    const loads = [
      ...objdumpHeaders(path.join(app, 'very-capable-app')).matchAll(
        /name @executable_path\/Frameworks\/(\S+)/g,
      ),
    ].map((m) => m[1]);
    expect(loads).toEqual(['libtweak.dylib', 'libgame.dylib']);
    expect(objdumpHeaders(path.join(app, 'Frameworks/libtweak.dylib'))).toContain(
      'name @executable_path/Frameworks/libCydiaSubstrate.dylib',
    );
    const seal = parsePlist(readFileSync(path.join(app, '_CodeSignature/CodeResources'))) as {
      files2: Record<string, PlistObject>;
    };
    for (const name of ['libtweak.dylib', 'libCydiaSubstrate.dylib', 'libgame.dylib']) {
      expect(seal.files2[`Frameworks/${name}`], name).toMatchObject({ cdhash: expect.any(Uint8Array) });
    }
    // Mode 2 takes the IGG list alone: nothing of the IAP one is read or bundled.
    const igg = path.join(dir, 'lists-igg.ipa');
    await sign({
      input: fixtureIpa,
      output: igg,
      identity: { p12: pki.p12, password: pki.password },
      profile: pki.profile(),
      mode: 2,
      dylibs: { iap: [path.join(dir, 'absent.dylib')], igg: [game] },
    });
    expect(
      readdirSync(path.join(unzip(igg), 'Frameworks')).filter((name) => name.endsWith('.dylib')),
    ).toEqual(['libgame.dylib']);
  });

  it('picks the dylibs of each mode in load order', () => {
    expect(dylibsForMode(0, { iap, igg })).toEqual([]);
    expect(dylibsForMode(1, { iap, igg })).toEqual([iap]);
    expect(dylibsForMode(2, { iap, igg })).toEqual([igg]);
    expect(dylibsForMode(3, { iap, igg })).toEqual([iap, igg]);
    expect(dylibsForMode(4, { iap, igg })).toEqual([]);
  });
});
