import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadIdentity } from '../identity.js';
import { parsePlist, type PlistObject } from '../plist.js';
import { createTestPki, type TestPki } from '../test-support/pki.js';
import {
  opensslVerifies,
  pageHashesMatch,
  readSignatures,
  specialSlotMatches,
} from '../test-support/verify-signature.js';
import { buildDylib, objdumpHeaders } from '../test-support/toolchain.js';
import { createMachOSigner } from './engine.js';
import { sign } from './sign.js';
import { signIpa } from './sign-ipa.js';
import { fixtureIpa } from '../test-support/fixtures.js';
import { missingTools } from '../test-support/system-tools.js';

/** Outside CI a machine without these skips this file with one line saying so. */
const skip = missingTools('openssl', 'unzip', 'llvm-objdump');

const APP = 'Payload/very-capable-app.app';

/** Every check a device makes of the main executable and its bundle, with tools that are not ours. */
function verifyApp(dir: string, pki: TestPki, profile: Buffer, bundleId = 'org.fastlane.very-capable-app') {
  const app = path.join(dir, APP);
  const binary = readFileSync(path.join(app, 'very-capable-app'));
  const codeResources = readFileSync(path.join(app, '_CodeSignature/CodeResources'));
  for (const signature of readSignatures(binary)) {
    expect(opensslVerifies(signature, pki.caPem).ok).toBe(true);
    expect(pageHashesMatch(binary, signature)).toBe(true);
    expect(specialSlotMatches(signature, 1, readFileSync(path.join(app, 'Info.plist')))).toBe(true);
    expect(specialSlotMatches(signature, 3, codeResources)).toBe(true);
    expect(signature.codeDirectories[0]!.identifier).toBe(bundleId);
    expect(signature.codeDirectories[0]!.teamId).toBe(pki.teamId);
    expect(signature.entitlementsXml).toContain(`<string>${pki.teamId}.${bundleId}</string>`);
  }
  // CodeResources lists every resource with its real SHA-1 and SHA-256, nested code by cdhash.
  const seal = parsePlist(codeResources) as { files2: Record<string, PlistObject> };
  expect(Object.keys(seal.files2)).toContain('embedded.mobileprovision');
  for (const [file, entry] of Object.entries(seal.files2)) {
    const bytes = readFileSync(path.join(app, file));
    if (entry.cdhash !== undefined) {
      const [nested] = readSignatures(bytes);
      expect(opensslVerifies(nested!, pki.caPem).ok, file).toBe(true);
      expect(pageHashesMatch(bytes, nested!), file).toBe(true);
      const cd256 = nested!.codeDirectories.find((cd) => cd.hashType === 2)!.bytes;
      expect(
        Buffer.from(entry.cdhash as Uint8Array).equals(
          createHash('sha256').update(cd256).digest().subarray(0, 20),
        ),
        file,
      ).toBe(true);
      continue;
    }
    expect(Buffer.from(entry.hash as Uint8Array).equals(createHash('sha1').update(bytes).digest())).toBe(
      true,
    );
    expect(Buffer.from(entry.hash2 as Uint8Array).equals(createHash('sha256').update(bytes).digest())).toBe(
      true,
    );
  }
  expect(readFileSync(path.join(app, 'embedded.mobileprovision')).equals(profile)).toBe(true);
}

describe.skipIf(skip)('signIpa', () => {
  let dir: string;
  let pki: TestPki;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'ipa-sign-'));
    pki = createTestPki(dir);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const unzipTo = (ipa: string, name: string) => {
    const target = path.join(dir, name);
    mkdirSync(target);
    execFileSync('unzip', ['-q', ipa, '-d', target]);
    return target;
  };

  it('re-signs the real Xcode-signed app so that every seal verifies, and again on its own output', async () => {
    const identity = loadIdentity({ p12: pki.p12, password: pki.password });
    const profile = pki.profile();
    const first = path.join(dir, 'first.ipa');
    const report = await signIpa({
      input: fixtureIpa,
      output: first,
      identity,
      profile,
      signer: createMachOSigner(identity),
    });
    expect(report.bundles).toEqual([
      {
        dir: APP,
        bundleId: 'org.fastlane.very-capable-app',
        kind: 'app',
        cdhash: expect.stringMatching(/^[0-9a-f]{40}$/),
      },
    ]);
    execFileSync('unzip', ['-tq', first]);
    verifyApp(unzipTo(first, 'first'), pki, profile);

    const second = path.join(dir, 'second.ipa');
    await signIpa({ input: first, output: second, identity, profile, signer: createMachOSigner(identity) });
    verifyApp(unzipTo(second, 'second'), pki, profile);
  });

  it('re-signs the real app in every sign mode, each passing the same checks', async () => {
    const iap = {
      name: 'libiap.dylib',
      bytes: readFileSync(buildDylib(dir, 'iap', 'int iap(void) { return 1; }\n', '@rpath/libiap.dylib')),
    };
    const igg = {
      name: 'libigg.dylib',
      bytes: readFileSync(buildDylib(dir, 'igg', 'int igg(void) { return 2; }\n', '@rpath/libigg.dylib')),
    };
    const profile = pki.profile();
    const original = path.join(unzipTo(fixtureIpa, 'original'), APP, 'very-capable-app');
    const originalHeaders = objdumpHeaders(original);
    const layout = (text: string) =>
      text
        .split('\n')
        .filter((line) => /^\s+(segname|sectname|vmaddr|fileoff|addr|offset) /.test(line))
        .map((line) => line.trim());
    expect(layout(originalHeaders).length).toBeGreaterThan(20);
    const injected: Record<number, string[]> = {
      0: [],
      1: ['libiap.dylib'],
      2: ['libigg.dylib'],
      3: ['libiap.dylib', 'libigg.dylib'],
      4: [],
    };
    for (const mode of [0, 1, 2, 3, 4] as const) {
      const output = path.join(dir, `mode-${mode}.ipa`);
      await sign({
        input: fixtureIpa,
        output,
        identity: { p12: pki.p12, password: pki.password },
        profile,
        mode,
        dylibs: { iap, igg },
        ...(mode === 4 ? { bundleIdPrefix: 'com.example.second' } : {}),
      });
      execFileSync('unzip', ['-tq', output]);
      const unzipped = unzipTo(output, `mode-${mode}`);
      verifyApp(unzipped, pki, profile, mode === 4 ? 'com.example.second' : 'org.fastlane.very-capable-app');
      const headers = objdumpHeaders(path.join(unzipped, APP, 'very-capable-app'));
      expect(headers, `mode ${mode}`).toContain('LC_CODE_SIGNATURE');
      const loads = [...headers.matchAll(/name @executable_path\/Frameworks\/(\S+)/g)].map((m) => m[1]);
      expect(loads, `mode ${mode}`).toEqual(injected[mode]);
      // Every segment and section the app was built with is still where it was.
      expect(layout(headers), `mode ${mode}`).toEqual(layout(originalHeaders));
    }
  });

  it('refuses a profile that does not hold the certificate, writing nothing', async () => {
    const identity = loadIdentity({ p12: pki.p12, password: pki.password });
    const output = path.join(dir, 'refused.ipa');
    await expect(
      signIpa({
        input: fixtureIpa,
        output,
        identity,
        profile: pki.profile({ withoutCertificate: true }),
        signer: createMachOSigner(identity),
      }),
    ).rejects.toMatchObject({ code: 'CERTIFICATE_NOT_IN_PROFILE' });
    expect(() => readFileSync(output)).toThrow();
  });
});
