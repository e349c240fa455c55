import { execFileSync } from 'node:child_process';
import { createHash, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codesignOrder, nameOf } from '../chain.js';
import { IpaError } from '../errors.js';
import { parseMachO } from '../macho/parse.js';
import { loadIdentity } from '../identity.js';
import { parsePlistDict } from '../plist.js';
import { asArm64e } from '../test-support/macho-bytes.js';
import { createTestChain, createTestPki, type TestPki } from '../test-support/pki.js';
import {
  HELPER_SOURCE,
  MAIN_SOURCE,
  buildDylib,
  buildExecutable,
  buildFat,
  objdumpHeaders,
} from '../test-support/toolchain.js';
import {
  cmsCertificateNames,
  opensslVerifies,
  pageHashesMatch,
  readSignatures,
  specialSlotMatches,
} from '../test-support/verify-signature.js';
import { codeDirectoryHashes } from './cdhash.js';
import { createCmsSigner, type CmsSigner } from './cms.js';
import { signMachO, type CodeSignInput } from './macho-sign.js';
import { missingTools } from '../test-support/system-tools.js';

/** Outside CI a machine without these skips this file with one line saying so. */
const skip = missingTools('openssl', 'llvm-objdump');

const dir = mkdtempSync(join(tmpdir(), 'ipa-msign-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let pki: TestPki;
let signer: CmsSigner;
let helperPath: string;
let appPath: string;
let infoPlist: Buffer;
let codeResources: Buffer;
let input: CodeSignInput;
beforeAll(() => {
  pki = createTestPki(dir);
  signer = createCmsSigner(loadIdentity({ p12: pki.p12, password: pki.password }));
  helperPath = buildDylib(dir, 'helper', HELPER_SOURCE, '@rpath/libhelper.dylib');
  appPath = buildExecutable(dir, 'app', MAIN_SOURCE, {
    link: [helperPath],
    rpaths: ['@executable_path/Frameworks'],
  });

  infoPlist = Buffer.from(
    '<?xml version="1.0"?><plist version="1.0"><dict><key>CFBundleIdentifier</key><string>com.example.app</string></dict></plist>',
  );
  codeResources = Buffer.from('<plist><dict/></plist>');
  input = {
    identifier: 'com.example.app',
    teamId: pki.teamId,
    commonName: pki.commonName,
    infoPlist,
    codeResources,
    entitlements: { 'application-identifier': `${pki.teamId}.com.example.app`, 'get-task-allow': true },
    isMainBinary: true,
    signer,
    now: new Date(),
  };
});

/**
 * A 64-bit fat file (0xcafebabf) written by hand, as lipo -fat64 would: fat_header { magic,
 * nfat_arch } then fat_arch_64 { cputype, cpusubtype, offset u64, size u64, align, reserved },
 * big-endian, each slice at a 2^14 boundary.
 */
function buildFat64(slices: Buffer[]): Buffer {
  const header = Buffer.alloc(8 + slices.length * 32);
  header.writeUInt32BE(0xcafebabf, 0);
  header.writeUInt32BE(slices.length, 4);
  const parts: Buffer[] = [header];
  let end = header.length;
  slices.forEach((slice, i) => {
    const offset = Math.ceil(end / 0x4000) * 0x4000;
    const at = 8 + i * 32;
    header.writeUInt32BE(slice.readUInt32LE(4), at); // cputype, from the thin mach_header
    header.writeUInt32BE(slice.readUInt32LE(8), at + 4); // cpusubtype
    header.writeBigUInt64BE(BigInt(offset), at + 8);
    header.writeBigUInt64BE(BigInt(slice.length), at + 16);
    header.writeUInt32BE(14, at + 24);
    parts.push(Buffer.alloc(offset - end), slice);
    end = offset + slice.length;
  });
  return Buffer.concat(parts);
}

/** The slices of a fat64 file, cut by reading its header here rather than through src/. */
function fat64Slices(fat: Buffer): Buffer[] {
  return Array.from({ length: fat.readUInt32BE(4) }, (_, i) => {
    const offset = Number(fat.readBigUInt64BE(8 + i * 32 + 8));
    return fat.subarray(offset, offset + Number(fat.readBigUInt64BE(8 + i * 32 + 16)));
  });
}

/** A copy of a built binary whose LC_BUILD_VERSION names another minimum iOS (major.0). */
function withMinimumIos(binary: Buffer, major: number): Buffer {
  const copy = Buffer.from(binary);
  const [slice] = parseMachO(copy).slices;
  const command = slice!.loadCommands.find((c) => c.command === 0x32)!; // LC_BUILD_VERSION
  copy.writeUInt32LE(major << 16, command.offset + 12); // build_version_command.minos
  return copy;
}

describe.skipIf(skip)('signMachO', () => {
  it('signs a built executable so that openssl verifies the CMS and every hash recomputes', () => {
    const signed = signMachO(readFileSync(appPath), 'app', input).bytes;
    const [signature] = readSignatures(signed);
    const verified = opensslVerifies(signature!, pki.caPem);
    expect(verified.ok).toBe(true);
    // Built for iOS 14, which validates SHA-256 alone: one SHA-256 CodeDirectory, as codesign signs it.
    expect(signature!.codeDirectories.map((cd) => cd.hashType)).toEqual([2]);
    expect(signature!.codeDirectories.map((cd) => [cd.identifier, cd.teamId, cd.specialSlotCount])).toEqual([
      ['com.example.app', pki.teamId, 7],
    ]);
    expect(signature!.codeDirectories[0]!.execSegFlags).toBe(0x11n);
    expect(pageHashesMatch(signed, signature!)).toBe(true);
    expect(specialSlotMatches(signature!, 1, infoPlist)).toBe(true);
    expect(specialSlotMatches(signature!, 3, codeResources)).toBe(true);
    for (const slot of [2, 5, 7])
      expect(specialSlotMatches(signature!, slot, signature!.blobs.get(slot)!)).toBe(true);
    expect(parsePlistDict(Buffer.from(signature!.entitlementsXml!))).toEqual(input.entitlements);
  });

  it('keeps a SHA-1 CodeDirectory first where the binary or its app targets an iOS before 11', () => {
    const built = readFileSync(appPath);
    for (const [bytes, options] of [
      [withMinimumIos(built, 10), {}],
      [built, { appNeedsSha1: true }],
    ] as const) {
      const signed = signMachO(bytes, 'app', { ...input, ...options }).bytes;
      const [signature] = readSignatures(signed);
      expect(signature!.codeDirectories.map((cd) => cd.hashType)).toEqual([1, 2]);
      expect(signature!.codeDirectories.map((cd) => cd.execSegFlags)).toEqual([0x11n, 0x11n]);
      expect(pageHashesMatch(signed, signature!)).toBe(true);
      expect(opensslVerifies(signature!, pki.caPem).ok).toBe(true);
    }
    // iOS 11 itself validates SHA-256 alone.
    const [eleven] = readSignatures(signMachO(withMinimumIos(built, 11), 'app', input).bytes);
    expect(eleven!.codeDirectories.map((cd) => cd.hashType)).toEqual([2]);
  });

  it("puts Apple's cdhash attributes in the CMS: 9.1 lists both cdhashes, 9.2 every full digest", () => {
    const signedWithBoth = signMachO(readFileSync(appPath), 'app', { ...input, appNeedsSha1: true });
    const [signature] = readSignatures(signedWithBoth.bytes);
    const [sha1Cd, sha256Cd] = signature!.codeDirectories.map((cd) => cd.bytes);
    const sha1 = createHash('sha1').update(sha1Cd!).digest('hex').toUpperCase();
    const sha256 = createHash('sha256').update(sha256Cd!).digest('hex').toUpperCase();
    const parsed = execFileSync('openssl', ['asn1parse', '-inform', 'DER'], {
      input: signature!.cms,
      encoding: 'utf8',
    });
    // One attribute .9.2 whose SET holds (sha1, digest) and (sha256, digest), in DER order.
    const agility = parsed
      .slice(parsed.indexOf(':1.2.840.113635.100.9.2'))
      .split('\n')
      .slice(1, 8)
      .map((line) =>
        line
          .replace(/^.*?(cons|prim): +/, '')
          .replace(/ +/g, ' ')
          .trim(),
      );
    expect(agility).toEqual([
      'SET',
      'SEQUENCE',
      'OBJECT :sha1',
      `OCTET STRING [HEX DUMP]:${sha1}`,
      'SEQUENCE',
      'OBJECT :sha256',
      `OCTET STRING [HEX DUMP]:${sha256}`,
    ]);
    expect(parsed.match(/:1\.2\.840\.113635\.100\.9\.2/g)).toHaveLength(1);
    const plistStart = signature!.cms.indexOf('<?xml');
    const plistText = signature!.cms.toString(
      'utf8',
      plistStart,
      signature!.cms.indexOf('</plist>', plistStart) + 8,
    );
    const cdhashes = [...plistText.matchAll(/<data>\s*([^<]+?)\s*<\/data>/g)].map((m) =>
      Buffer.from(m[1]!, 'base64').toString('hex').toUpperCase(),
    );
    expect(cdhashes).toEqual([sha1, sha256.slice(0, 40)]);
  });

  it("embeds the operator's intermediate and root in codesign's order, so openssl verifies against the root alone", () => {
    // root -> WWDR-like intermediate -> leaf; the leaf's .p12 holds neither issuer, as a Keychain export.
    const chain = createTestChain(dir);
    const p12 = readFileSync(chain.leafP12);
    const rootPem = readFileSync(chain.rootPem, 'utf8');
    const signWith = (identity: ReturnType<typeof loadIdentity>) =>
      readSignatures(
        signMachO(readFileSync(appPath), 'app', { ...input, signer: createCmsSigner(identity) }).bytes,
      )[0]!;

    const chained = signWith(
      loadIdentity({
        p12,
        password: 'secret',
        chain: [readFileSync(chain.intermediatePem), Buffer.from(rootPem)],
      }),
    );
    expect(opensslVerifies(chained, rootPem).ok).toBe(true);
    // Sorted as a DER SET OF, as codesign and OpenSSL write it: these three sort by length.
    expect(cmsCertificateNames(chained)).toEqual(
      codesignOrder(
        [chain.leafPem, chain.intermediatePem, chain.rootPem].map(
          (f) => new X509Certificate(readFileSync(f)).raw,
        ),
      ).map((der) => nameOf(new X509Certificate(der))),
    );
    expect(cmsCertificateNames(chained).sort()).toEqual([
      'Apple Development: Dev (TEAM123456)',
      'Test Root',
      'Test WWDR',
    ]);
    // The leaf alone is never signed with.
    expect(() => createCmsSigner(loadIdentity({ p12, password: 'secret' }))).toThrow(
      /^The issuer of the signing certificate "Apple Development: Dev \(TEAM123456\)", "Test WWDR", is not in the \.p12/,
    );
  });

  it('adds LC_CODE_SIGNATURE and grows __LINKEDIT, as llvm-objdump reads it', () => {
    const original = readFileSync(appPath);
    const signed = signMachO(original, 'app', input).bytes;
    const out = join(dir, 'signed-app');
    writeFileSync(out, signed);
    const headers = objdumpHeaders(out);
    expect(headers).toContain('LC_CODE_SIGNATURE');
    expect(headers).toMatch(/segname __LINKEDIT[\s\S]*?filesize (\d+)/);
    const linkeditSize = Number(
      /segname __LINKEDIT[\s\S]*?fileoff (\d+)\s+filesize (\d+)/
        .exec(headers)!
        .slice(1)
        .reduce((a, b) => String(Number(a) + Number(b))),
    );
    expect(linkeditSize).toBe(signed.length);
    expect(signed.subarray(0x4000, 0x8000).equals(original.subarray(0x4000, 0x8000))).toBe(true);
  });

  it('re-signing a signed binary gives a valid signature again, replacing the old one', () => {
    const once = signMachO(readFileSync(appPath), 'app', input).bytes;
    // An identifier of the same length, so the new signature needs exactly the room of the old one.
    const twice = signMachO(once, 'app', { ...input, identifier: 'com.example.xyz' }).bytes;
    const [signature] = readSignatures(twice);
    expect(opensslVerifies(signature!, pki.caPem).ok).toBe(true);
    expect(pageHashesMatch(twice, signature!)).toBe(true);
    expect(signature!.codeDirectories[0]!.identifier).toBe('com.example.xyz');
    expect(twice.length).toBe(once.length);
  });

  it('signs a dylib without entitlements or the main-binary flag', () => {
    const signed = signMachO(readFileSync(helperPath), 'libhelper.dylib', {
      identifier: 'libhelper',
      teamId: pki.teamId,
      commonName: pki.commonName,
      isMainBinary: false,
      signer,
      now: new Date(),
    }).bytes;
    const [signature] = readSignatures(signed);
    expect(signature!.blobs.has(5)).toBe(false);
    expect(signature!.blobs.has(7)).toBe(false);
    expect(signature!.codeDirectories[0]!.specialSlotCount).toBe(2);
    expect(signature!.codeDirectories[0]!.execSegFlags).toBe(0n);
    expect(opensslVerifies(signature!, pki.caPem).ok).toBe(true);
    expect(pageHashesMatch(signed, signature!)).toBe(true);
  });

  it('signs every slice of a fat binary and keeps the slices aligned', () => {
    const thin = readFileSync(appPath);
    const e = join(dir, 'app-e');
    writeFileSync(e, asArm64e(thin));
    const fat = readFileSync(buildFat(dir, 'app', [appPath, e]));
    const signed = signMachO(fat, 'app', input).bytes;
    const signatures = readSignatures(signed);
    expect(signatures).toHaveLength(2);
    for (const signature of signatures) {
      expect(signature.offset % 0x4000).toBe(0);
      expect(opensslVerifies(signature, pki.caPem).ok).toBe(true);
      expect(pageHashesMatch(signed, signature)).toBe(true);
    }
    const hashes = codeDirectoryHashes(signed);
    expect(hashes.map((h) => h.arch)).toEqual(['arm64', 'arm64e']);
    hashes.forEach((slice, i) => {
      const sha256 = createHash('sha256').update(signatures[i]!.codeDirectories.at(-1)!.bytes).digest();
      expect(slice.codeDirectories.at(-1)!.digest.equals(sha256)).toBe(true);
    });
  });

  it('signs every slice of a 64-bit fat file and keeps its header 64-bit', () => {
    const thin = readFileSync(appPath);
    const fat = buildFat64([thin, asArm64e(thin)]);
    expect(parseMachO(fat).slices.map((slice) => [slice.arch, slice.offset])).toEqual([
      ['arm64', 0x4000],
      ['arm64e', 0x4000 + Math.ceil(thin.length / 0x4000) * 0x4000],
    ]);
    const signed = signMachO(fat, 'app', input).bytes;
    expect(signed.readUInt32BE(0)).toBe(0xcafebabf);
    for (const slice of fat64Slices(signed)) {
      const [signature] = readSignatures(slice);
      expect(opensslVerifies(signature!, pki.caPem).ok).toBe(true);
      expect(pageHashesMatch(slice, signature!)).toBe(true);
    }
    expect(
      fat64Slices(signed)
        .map((slice) => slice.byteOffset - signed.byteOffset)
        .every((offset) => offset % 0x4000 === 0),
    ).toBe(true);
  });

  it('refuses to add LC_CODE_SIGNATURE where the load commands have no room, leaving the input as it was: LOAD_COMMANDS_FULL', () => {
    const full = Buffer.from(readFileSync(appPath));
    const [slice] = parseMachO(full).slices;
    const end = slice!.headerSizeBytes + slice!.commandsSizeBytes;
    // An LC_RPATH whose padded path fills all but 8 of the free bytes: too few for a 16-byte command.
    const size = Math.floor((slice!.freeCommandBytes - 8) / 8) * 8;
    full.writeUInt32LE(0x8000001c, end);
    full.writeUInt32LE(size, end + 4);
    full.writeUInt32LE(12, end + 8);
    full.write('@loader_path/padding', end + 12);
    full.writeUInt32LE(slice!.commandCount + 1, 16);
    full.writeUInt32LE(slice!.commandsSizeBytes + size, 20);
    expect(parseMachO(full).slices[0]!.freeCommandBytes).toBeLessThan(16);
    const before = Buffer.from(full);
    expect(() => signMachO(full, 'app', input)).toThrow(
      expect.objectContaining({ code: 'LOAD_COMMANDS_FULL' }),
    );
    expect(full.equals(before)).toBe(true);
  });

  it('gives an IpaError, or a signature whose page hashes recompute, for any corruption of the header, never a crash', () => {
    const original = readFileSync(appPath);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1023 }), fc.integer({ min: 0, max: 255 }), (at, value) => {
        const copy = Buffer.from(original);
        copy[at] = value;
        let signed: Buffer;
        try {
          signed = signMachO(copy, 'app', input).bytes;
        } catch (err) {
          expect(err).toBeInstanceOf(IpaError);
          return;
        }
        expect(pageHashesMatch(signed, readSignatures(signed)[0]!)).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  it('refuses to list cdhashes of an unsigned binary: SIGNATURE_INVALID', () => {
    expect(() => codeDirectoryHashes(readFileSync(appPath))).toThrow(
      expect.objectContaining({ code: 'SIGNATURE_INVALID' }),
    );
  });
});
