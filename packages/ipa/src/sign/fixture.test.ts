/**
 * The real Xcode-signed arm64 executable of the fixture IPA: its own signature read back, then
 * re-signed with a throwaway identity and checked with tools that are not ours.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as plist from 'plist';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadIdentity } from '../identity.js';
import { parseMachO } from '../macho/parse.js';
import { createTestPki, type TestPki } from '../test-support/pki.js';
import { objdumpHeaders } from '../test-support/toolchain.js';
import {
  opensslVerifies,
  pageHashesMatch,
  readSignatures,
  specialSlotMatches,
} from '../test-support/verify-signature.js';
import { codeDirectoryHashes } from './cdhash.js';
import { createCmsSigner } from './cms.js';
import { signMachO, type CodeSignInput } from './macho-sign.js';
import { readEmbeddedEntitlements } from './read-signature.js';
import { fixtureIpa } from '../test-support/fixtures.js';
import { missingTools } from '../test-support/system-tools.js';

/** Outside CI a machine without these skips this file with one line saying so. */
const skip = missingTools('openssl', 'unzip', 'llvm-objdump');

const dir = mkdtempSync(join(tmpdir(), 'ipa-fixture-sign-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let appDir: string;
let original: Buffer;
let infoPlist: Buffer;
let codeResources: Buffer;
let pki: TestPki;
let identity: ReturnType<typeof loadIdentity>;
beforeAll(() => {
  execFileSync('unzip', ['-q', fixtureIpa, '-d', dir]);
  appDir = join(dir, 'Payload', 'very-capable-app.app');
  original = readFileSync(join(appDir, 'very-capable-app'));
  infoPlist = readFileSync(join(appDir, 'Info.plist'));
  codeResources = readFileSync(join(appDir, '_CodeSignature', 'CodeResources'));

  pki = createTestPki(dir);
  identity = loadIdentity({ p12: pki.p12, password: pki.password });
});

/** The cdhashes plist (attribute 1.2.840.113635.100.9.1) lies in the CMS DER as plain XML. */
function cmsPlistCdHashes(cms: Buffer): string[] {
  const start = cms.indexOf('<?xml');
  const end = cms.indexOf('</plist>', start) + '</plist>'.length;
  const parsed = plist.parse(cms.toString('utf8', start, end)) as { cdhashes: Buffer[] };
  return parsed.cdhashes.map((h) => Buffer.from(h).toString('hex'));
}

function segmentsOf(path: string): string[] {
  const text = objdumpHeaders(path);
  // Every segment's name, address and file offset; __LINKEDIT's sizes are expected to grow.
  return [
    ...text.matchAll(/segname (\S+)\s+vmaddr (\S+)\s+vmsize (\S+)\s+fileoff (\S+)\s+filesize (\S+)/g),
  ].map((m) => (m[1] === '__LINKEDIT' ? `${m[1]} ${m[2]} ${m[4]}` : m.slice(1).join(' ')));
}

function resign(bytes: Buffer, options: { appNeedsSha1?: boolean } = {}): Buffer {
  const input: CodeSignInput = {
    ...options,
    identifier: 'org.fastlane.very-capable-app',
    teamId: pki.teamId,
    commonName: pki.commonName,
    infoPlist,
    codeResources,
    entitlements: readEmbeddedEntitlements(bytes)!,
    isMainBinary: true,
    signer: createCmsSigner(identity),
    now: new Date('2026-01-02T03:04:05Z'),
  };
  return signMachO(bytes, 'very-capable-app', input).bytes;
}

describe.skipIf(skip)('the Xcode-signed fixture executable', () => {
  it('has cdhashes that match the ones Xcode listed in its CMS', () => {
    const [xcode] = readSignatures(original);
    const [slice] = codeDirectoryHashes(original);
    expect(slice!.codeDirectories.map((cd) => [cd.slot, cd.hashType])).toEqual([
      [0, 1],
      [0x1000, 2],
    ]);
    expect(slice!.codeDirectories.map((cd) => cd.cdhash.toString('hex'))).toEqual(
      cmsPlistCdHashes(xcode!.cms),
    );
  });

  it('re-signs so that openssl verifies the CMS and every page and special slot recomputes', () => {
    const signed = resign(original);
    const [signature] = readSignatures(signed);
    const verified = opensslVerifies(signature!, pki.caPem);
    expect(verified.output).toBe('');
    expect(verified.ok).toBe(true);
    expect(pageHashesMatch(signed, signature!)).toBe(true);
    expect(specialSlotMatches(signature!, 1, infoPlist)).toBe(true);
    expect(specialSlotMatches(signature!, 3, codeResources)).toBe(true);
    for (const slot of [2, 5, 7])
      expect(specialSlotMatches(signature!, slot, signature!.blobs.get(slot)!)).toBe(true);
    // It targets iOS 11.2 (LC_VERSION_MIN_IPHONEOS), which validates SHA-256 alone: no SHA-1 directory.
    expect(signature!.codeDirectories.map((cd) => [cd.hashType, cd.identifier, cd.teamId])).toEqual([
      [2, 'org.fastlane.very-capable-app', pki.teamId],
    ]);
    // get-task-allow is in the app's development entitlements: main binary | allow unsigned, as Xcode wrote.
    expect(signature!.codeDirectories.map((cd) => cd.execSegFlags)).toEqual([0x11n]);
    expect(codeDirectoryHashes(signed)[0]!.codeDirectories.map((cd) => cd.cdhash.toString('hex'))).toEqual(
      cmsPlistCdHashes(signature!.cms),
    );
  });

  it('keeps a SHA-1 directory first, SHA-256 beside it, when its app supports an iOS before 11', () => {
    const signed = resign(original, { appNeedsSha1: true });
    const [signature] = readSignatures(signed);
    expect(signature!.codeDirectories.map((cd) => cd.hashType)).toEqual([1, 2]);
    expect(pageHashesMatch(signed, signature!)).toBe(true);
    expect(opensslVerifies(signature!, pki.caPem).ok).toBe(true);
    expect(codeDirectoryHashes(signed)[0]!.codeDirectories.map((cd) => cd.cdhash.toString('hex'))).toEqual(
      cmsPlistCdHashes(signature!.cms),
    );
  });

  it('hashes every page but the header page exactly as Xcode did, with the same code limit and executable segment', () => {
    const [xcode] = readSignatures(original);
    const [ours] = readSignatures(resign(original, { appNeedsSha1: true }));
    xcode!.codeDirectories.forEach((theirs, i) => {
      const mine = ours!.codeDirectories[i]!;
      expect([mine.codeLimit, mine.codeSlotCount]).toEqual([theirs.codeLimit, theirs.codeSlotCount]);
      // CodeDirectory 0x20400: execSegBase (64), execSegLimit (72), execSegFlags (80), u64 each.
      expect(mine.bytes.subarray(64, 88).equals(theirs.bytes.subarray(64, 88))).toBe(true);
      const pages = (cd: typeof mine): Buffer =>
        cd.bytes.subarray(cd.bytes.readUInt32BE(16) + cd.bytes.readUInt8(36));
      // Page 0 holds the load commands whose sizes signing rewrites; every other page is untouched code.
      expect(pages(mine).equals(pages(theirs))).toBe(true);
    });
  });

  it('keeps the code and every segment where it was, and stays unencrypted', () => {
    const signed = resign(original);
    const out = join(dir, 'resigned');
    writeFileSync(out, signed);
    expect(segmentsOf(out)).toEqual(segmentsOf(join(appDir, 'very-capable-app')));
    const [slice] = parseMachO(signed).slices;
    expect(slice!.cryptid).toBe(0);
    const codeLimit = parseMachO(original).slices[0]!.codeSignature!.dataOffset;
    // Only the two header fields change below the signature: LC_CODE_SIGNATURE.datasize and __LINKEDIT's sizes.
    const differing = [...Array(codeLimit).keys()].filter((i) => signed[i] !== original[i]);
    expect(differing.every((i) => i < 0x2000)).toBe(true);
  });

  it('re-signs its own output into a valid signature again', () => {
    const twice = resign(resign(original));
    const [signature] = readSignatures(twice);
    expect(opensslVerifies(signature!, pki.caPem).ok).toBe(true);
    expect(pageHashesMatch(twice, signature!)).toBe(true);
  });
});
