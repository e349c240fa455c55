/**
 * An app built here with clang and ld64.lld, with a framework, a loose dylib, an app extension and
 * a watch app, signed end to end and checked with tools that are not ours.
 */
import { execFileSync } from 'node:child_process';
import { X509Certificate, createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBinaryPlist, buildXmlPlist, parsePlist, type PlistObject } from '../plist.js';
import { EXECUTABLE_MODE, buildZip, type TestZipEntry } from '../test-support/build-zip.js';
import { withCryptid } from '../test-support/macho-bytes.js';
import { createTestPki, type TestPki } from '../test-support/pki.js';
import {
  HELPER_SOURCE,
  PLAIN_MAIN_SOURCE,
  buildDylib,
  buildExecutable,
  objdumpHeaders,
} from '../test-support/toolchain.js';
import {
  opensslVerifies,
  pageHashesMatch,
  readSignatures,
  specialSlotMatches,
} from '../test-support/verify-signature.js';
import { IpaError } from '../errors.js';
import { loadIdentity } from '../identity.js';
import { createMachOSigner } from './engine.js';
import { sign } from './sign.js';
import { signIpa } from './sign-ipa.js';
import { missingTools } from '../test-support/system-tools.js';

/** Outside CI a machine without these skips this file with one line saying so. */
const skip = missingTools('openssl', 'unzip', 'llvm-objdump');

const APP = 'Payload/Host.app';
const HOST_ID = 'com.example.host';
let dir: string;
let pki: TestPki;
let input: string;
let entries: TestZipEntry[];

const info = (id: string, executable: string, extra: PlistObject = {}): PlistObject => ({
  CFBundleIdentifier: id,
  CFBundleExecutable: executable,
  CFBundleShortVersionString: '1.2',
  CFBundleVersion: '7',
  MinimumOSVersion: '14.0',
  ...extra,
});

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'ipa-nested-'));
  pki = createTestPki(dir);
  const kit = buildDylib(dir, 'kit', 'int kit(int x) { return x + 1; }\n', '@rpath/Kit.framework/Kit');
  const helper = buildDylib(dir, 'helper', HELPER_SOURCE, '@rpath/libhelper.dylib');
  const host = buildExecutable(
    dir,
    'host',
    'int kit(int); int helper(int);\nint main(void) { return kit(helper(1)); }\n',
    {
      link: [kit, helper],
      rpaths: ['@executable_path/Frameworks'],
    },
  );
  const share = buildExecutable(dir, 'share', PLAIN_MAIN_SOURCE);
  const watch = buildExecutable(dir, 'watch', PLAIN_MAIN_SOURCE);
  entries = [
    { name: 'Payload/' },
    { name: `${APP}/` },
    { name: `${APP}/Host`, data: readFileSync(host), mode: EXECUTABLE_MODE },
    { name: `${APP}/Info.plist`, data: buildBinaryPlist(info(HOST_ID, 'Host')) },
    { name: `${APP}/a.txt`, data: 'a resource\n' },
    { name: `${APP}/en.lproj/Localizable.strings`, data: '"hello" = "Hello";\n' },
    { name: `${APP}/Frameworks/Kit.framework/Kit`, data: readFileSync(kit), mode: EXECUTABLE_MODE },
    {
      name: `${APP}/Frameworks/Kit.framework/Info.plist`,
      data: buildXmlPlist(info('com.example.kit', 'Kit', { CFBundlePackageType: 'FMWK' })),
    },
    { name: `${APP}/Frameworks/Kit.framework/kit.json`, data: '{"kit":true}' },
    { name: `${APP}/Frameworks/libhelper.dylib`, data: readFileSync(helper), mode: EXECUTABLE_MODE },
    { name: `${APP}/PlugIns/Share.appex/Share`, data: readFileSync(share), mode: EXECUTABLE_MODE },
    {
      name: `${APP}/PlugIns/Share.appex/Info.plist`,
      data: buildXmlPlist(
        info(`${HOST_ID}.share`, 'Share', {
          NSExtension: { NSExtensionPointIdentifier: 'com.apple.share-services' },
        }),
      ),
    },
    { name: `${APP}/Watch/HostWatch.app/HostWatch`, data: readFileSync(watch), mode: EXECUTABLE_MODE },
    {
      name: `${APP}/Watch/HostWatch.app/Info.plist`,
      data: buildXmlPlist(
        info(`${HOST_ID}.watchkitapp`, 'HostWatch', { WKCompanionAppBundleIdentifier: HOST_ID }),
      ),
    },
  ];
  input = path.join(dir, 'Host.ipa');
  writeFileSync(input, buildZip(entries));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function signAndUnzip(
  name: string,
  options: { mode?: 0 | 4; bundleIdPrefix?: string } = {},
): Promise<string> {
  const output = path.join(dir, `${name}.ipa`);
  await sign({
    input,
    output,
    identity: { p12: pki.p12, password: pki.password },
    profile: pki.profile(),
    ...options,
  });
  const target = path.join(dir, name);
  mkdirSync(target);
  execFileSync('unzip', ['-q', output, '-d', target]);
  return path.join(target, APP);
}

const sha = (algorithm: string, bytes: Buffer) => createHash(algorithm).update(bytes).digest();
/** The cdhash CodeResources records: the SHA-256 CodeDirectory's hash, truncated to 20 bytes. */
const cdhashOf = (binary: Buffer) =>
  sha('sha256', readSignatures(binary)[0]!.codeDirectories.find((cd) => cd.hashType === 2)!.bytes).subarray(
    0,
    20,
  );

describe.skipIf(skip)('signing an app with nested code', () => {
  const code = [
    { file: 'Host', id: HOST_ID, isMain: true, bundle: '' },
    {
      file: 'PlugIns/Share.appex/Share',
      id: `${HOST_ID}.share`,
      isMain: true,
      bundle: 'PlugIns/Share.appex',
    },
    {
      file: 'Watch/HostWatch.app/HostWatch',
      id: `${HOST_ID}.watchkitapp`,
      isMain: true,
      bundle: 'Watch/HostWatch.app',
    },
    {
      file: 'Frameworks/Kit.framework/Kit',
      id: 'com.example.kit',
      isMain: false,
      bundle: 'Frameworks/Kit.framework',
    },
    { file: 'Frameworks/libhelper.dylib', id: 'libhelper', isMain: false, bundle: undefined },
  ];

  it('signs every Mach-O so openssl verifies it and every page and special slot recomputes', async () => {
    const app = await signAndUnzip('normal');
    for (const { file, id, isMain, bundle } of code) {
      const binary = readFileSync(path.join(app, file));
      const [signature] = readSignatures(binary);
      expect(opensslVerifies(signature!, pki.caPem).ok, file).toBe(true);
      expect(pageHashesMatch(binary, signature!), file).toBe(true);
      expect(
        signature!.codeDirectories.map((cd) => [cd.identifier, cd.teamId]),
        file,
      ).toEqual([[id, pki.teamId]]);
      expect(objdumpHeaders(path.join(app, file))).toContain('LC_CODE_SIGNATURE');
      // Entitlements and the main-binary flag on app and extension executables only.
      expect(signature!.blobs.has(5), file).toBe(isMain);
      expect(signature!.blobs.has(7), file).toBe(isMain);
      expect(signature!.codeDirectories[0]!.execSegFlags & 1n, file).toBe(isMain ? 1n : 0n);
      if (bundle !== undefined) {
        const root = path.join(app, bundle);
        expect(specialSlotMatches(signature!, 1, readFileSync(path.join(root, 'Info.plist'))), file).toBe(
          true,
        );
        expect(
          specialSlotMatches(signature!, 3, readFileSync(path.join(root, '_CodeSignature/CodeResources'))),
          file,
        ).toBe(true);
      }
    }
  });

  it('gives every Mach-O a SHA-1 CodeDirectory too when the app supports an iOS before 11, whatever each was built for', async () => {
    // Each binary here was built for iOS 14; an app that still runs on iOS 10 needs them all signed
    // for it, or its frameworks fail to install there.
    const oldInput = path.join(dir, 'Old.ipa');
    writeFileSync(
      oldInput,
      buildZip(
        entries.map((entry) =>
          entry.name === `${APP}/Info.plist`
            ? { ...entry, data: buildBinaryPlist(info(HOST_ID, 'Host', { MinimumOSVersion: '10.0' })) }
            : entry,
        ),
      ),
    );
    const output = path.join(dir, 'old-signed.ipa');
    await sign({
      input: oldInput,
      output,
      identity: { p12: pki.p12, password: pki.password },
      profile: pki.profile(),
    });
    const target = path.join(dir, 'old');
    mkdirSync(target);
    execFileSync('unzip', ['-q', output, '-d', target]);
    for (const { file } of code) {
      const binary = readFileSync(path.join(target, APP, file));
      const [signature] = readSignatures(binary);
      expect(
        signature!.codeDirectories.map((cd) => cd.hashType),
        file,
      ).toEqual([1, 2]);
      expect(pageHashesMatch(binary, signature!), file).toBe(true);
      expect(opensslVerifies(signature!, pki.caPem).ok, file).toBe(true);
    }
  });

  it('seals nested code by cdhash and resources by both hashes, inside out', async () => {
    const app = await signAndUnzip('seal');
    const seal = parsePlist(readFileSync(path.join(app, '_CodeSignature/CodeResources'))) as {
      files: PlistObject;
      files2: Record<string, PlistObject>;
    };
    for (const nested of ['Frameworks/Kit.framework', 'PlugIns/Share.appex', 'Watch/HostWatch.app']) {
      const executable = code.find((c) => c.bundle === nested)!.file;
      expect(Buffer.from(seal.files2[nested]!.cdhash as Uint8Array)).toEqual(
        cdhashOf(readFileSync(path.join(app, executable))),
      );
      // The test CA is not Apple's, so codesign's form pins the chain's root by its SHA-1.
      const rootSha1 = new X509Certificate(pki.caPem).fingerprint.replace(/:/g, '').toLowerCase();
      const id = seal.files2[nested]!.requirement as string;
      expect(id).toMatch(new RegExp(`^identifier "[^"]+" and certificate root = H"${rootSha1}"$`));
    }
    expect(Buffer.from(seal.files2['Frameworks/libhelper.dylib']!.cdhash as Uint8Array)).toEqual(
      cdhashOf(readFileSync(path.join(app, 'Frameworks/libhelper.dylib'))),
    );
    for (const resource of ['a.txt', 'en.lproj/Localizable.strings', 'embedded.mobileprovision']) {
      const bytes = readFileSync(path.join(app, resource));
      expect(Buffer.from(seal.files2[resource]!.hash as Uint8Array), resource).toEqual(sha('sha1', bytes));
      expect(Buffer.from(seal.files2[resource]!.hash2 as Uint8Array), resource).toEqual(sha('sha256', bytes));
    }
    expect(seal.files2['en.lproj/Localizable.strings']!.optional).toBe(true);
    // Nested bundles' own files are sealed by their own signatures, not listed again.
    expect(Object.keys(seal.files2).filter((key) => key.startsWith('Frameworks/Kit.framework/'))).toEqual([]);
    expect(seal.files2).not.toHaveProperty('Info.plist');
    expect(seal.files2).not.toHaveProperty('Host');
    const kitSeal = parsePlist(
      readFileSync(path.join(app, 'Frameworks/Kit.framework/_CodeSignature/CodeResources')),
    ) as { files2: Record<string, PlistObject> };
    expect(Buffer.from(kitSeal.files2['kit.json']!.hash2 as Uint8Array)).toEqual(
      sha('sha256', Buffer.from('{"kit":true}')),
    );
  });

  it('streams every binary through the signer when told to, with the same result as in memory', async () => {
    const identity = loadIdentity({ p12: pki.p12, password: pki.password });
    const profile = pki.profile();
    const now = new Date('2026-03-04T05:06:07Z');
    const outputs: string[] = [];
    for (const streamAboveBytes of [0, 1 << 30]) {
      const output = path.join(dir, `stream-${streamAboveBytes}.ipa`);
      await signIpa({
        input,
        output,
        identity,
        profile,
        signer: createMachOSigner(identity, () => now),
        now,
        streamAboveBytes,
      });
      outputs.push(output);
    }
    const unzipped = outputs.map((output) => {
      const target = `${output}.d`;
      mkdirSync(target);
      execFileSync('unzip', ['-q', output, '-d', target]);
      return path.join(target, APP);
    });
    for (const { file } of code) {
      const streamed = readFileSync(path.join(unzipped[0]!, file));
      expect(streamed.equals(readFileSync(path.join(unzipped[1]!, file))), file).toBe(true);
      expect(opensslVerifies(readSignatures(streamed)[0]!, pki.caPem).ok).toBe(true);
    }
    expect(
      readFileSync(path.join(unzipped[0]!, '_CodeSignature/CodeResources')).equals(
        readFileSync(path.join(unzipped[1]!, '_CodeSignature/CodeResources')),
      ),
    ).toBe(true);
    expect(execFileSync('unzip', ['-tq', outputs[0]!], { encoding: 'utf8' })).toContain('No errors detected');
  });

  it('DUP moves the app and what is under its id to the new id, watch and extension references included; frameworks keep theirs', async () => {
    const app = await signAndUnzip('dup', { mode: 4, bundleIdPrefix: 'io.copy.host' });
    const ids = new Set<string>();
    const strings: string[] = [];
    const collect = (v: unknown) =>
      typeof v === 'string'
        ? strings.push(v)
        : v && typeof v === 'object'
          ? Object.values(v).forEach(collect)
          : undefined;
    for (const { file, bundle } of code) {
      const [signature] = readSignatures(readFileSync(path.join(app, file)));
      ids.add(signature!.codeDirectories[0]!.identifier);
      expect(opensslVerifies(signature!, pki.caPem).ok).toBe(true);
      if (signature!.entitlementsXml !== undefined) {
        const entitlements = parsePlist(Buffer.from(signature!.entitlementsXml)) as PlistObject;
        expect(entitlements['application-identifier']).toBe(
          `${pki.teamId}.${signature!.codeDirectories[0]!.identifier}`,
        );
        collect(entitlements);
      }
      if (bundle === undefined) continue;
      const plist = parsePlist(readFileSync(path.join(app, bundle, 'Info.plist'))) as PlistObject;
      expect(plist.CFBundleIdentifier).toBe(signature!.codeDirectories[0]!.identifier);
      collect(plist);
    }
    const watch = parsePlist(readFileSync(path.join(app, 'Watch/HostWatch.app/Info.plist'))) as PlistObject;
    expect(watch.WKCompanionAppBundleIdentifier).toBe('io.copy.host');
    expect([...ids].sort()).toEqual([
      'com.example.kit',
      'io.copy.host',
      'io.copy.host.share',
      'io.copy.host.watchkitapp',
      'libhelper',
    ]);
    expect(strings.filter((s) => s.includes(HOST_ID))).toEqual([]);
  });

  it('refuses an app whose extension is still encrypted, leaving no output: MACHO_ENCRYPTED', async () => {
    const share = `${APP}/PlugIns/Share.appex/Share`;
    const encrypted = entries.map((e) =>
      e.name === share ? { ...e, data: withCryptid(e.data as Buffer, 1) } : e,
    );
    const encryptedIpa = path.join(dir, 'encrypted.ipa');
    writeFileSync(encryptedIpa, buildZip(encrypted));
    const identity = loadIdentity({ p12: pki.p12, password: pki.password });
    for (const streamAboveBytes of [0, 1 << 30]) {
      const out = path.join(dir, `encrypted-out-${streamAboveBytes}`);
      mkdirSync(out);
      const output = path.join(out, 'signed.ipa');
      await expect(
        signIpa({
          input: encryptedIpa,
          output,
          identity,
          profile: pki.profile(),
          signer: createMachOSigner(identity),
          streamAboveBytes,
        }),
      ).rejects.toThrow(
        new IpaError(
          'MACHO_ENCRYPTED',
          `Expected ${share} (arm64) to be decrypted (cryptid 0), found cryptid 1: decrypt the version first.`,
        ),
      );
      expect(readdirSync(out)).toEqual([]);
    }
  });
});
