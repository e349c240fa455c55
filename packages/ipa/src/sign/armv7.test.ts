/**
 * 32-bit code: an armv7 executable (mach_header, LC_SEGMENT, LC_ENCRYPTION_INFO) alone and beside
 * arm64 in a fat file, as apps built for iOS 10 and earlier ship it.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IpaError } from '../errors.js';
import { loadIdentity } from '../identity.js';
import { parseMachO } from '../macho/parse.js';
import { createTestPki, type TestPki } from '../test-support/pki.js';
import {
  PLAIN_MAIN_SOURCE,
  buildExecutable,
  keptToolRun,
  lipoCreate,
  objdumpHeaders,
} from '../test-support/toolchain.js';
import { opensslVerifies, pageHashesMatch, readSignatures } from '../test-support/verify-signature.js';
import { createCmsSigner } from './cms.js';
import { signMachO, type CodeSignInput } from './macho-sign.js';
import { missingTools } from '../test-support/system-tools.js';

/** Outside CI a machine without these skips this file with one line saying so. */
const skip = missingTools('openssl', 'llvm-objdump');

const dir = mkdtempSync(join(tmpdir(), 'ipa-armv7-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let pki: TestPki;
let input: CodeSignInput;
beforeAll(() => {
  pki = createTestPki(dir);
  input = {
    identifier: 'com.example.legacy',
    teamId: pki.teamId,
    commonName: pki.commonName,
    isMainBinary: true,
    signer: createCmsSigner(loadIdentity({ p12: pki.p12, password: pki.password })),
    now: new Date(),
  };
});

/** lld links armv7 only for code without data relocations: main returns a constant. */
function buildArmv7(): string {
  const ld = ['-arch', 'armv7', '-platform_version', 'ios', '9.0', '9.0'];
  return keptToolRun(
    dir,
    [
      ...['stub', 'main7'].map((name) => ({
        tool: 'clang' as const,
        args: ['-target', 'armv7-apple-ios9.0', '-O1', '-c', `${name}.c`, '-o', `${name}.o`],
      })),
      {
        tool: 'ld',
        args: [
          ...ld,
          '-dylib',
          '-install_name',
          '/usr/lib/libSystem.B.dylib',
          'stub.o',
          '-o',
          'libSystem-armv7.dylib',
        ],
      },
      {
        tool: 'ld',
        args: [
          ...ld,
          '-execute',
          '-e',
          '_main',
          '-headerpad',
          '0x400',
          'main7.o',
          'libSystem-armv7.dylib',
          '-o',
          'app-armv7',
        ],
      },
    ],
    {
      'stub.c': 'void stub(void) __asm__("dyld_stub_binder");\nvoid stub(void) {}\n',
      'main7.c': 'int main(void) { return 7; }\n',
    },
    'app-armv7',
  );
}

const armv7Path = buildArmv7();
const arm64Path = buildExecutable(dir, 'app', PLAIN_MAIN_SOURCE);

/** cryptid of the first LC_ENCRYPTION_INFO (0x21) of a thin 32-bit file, found without src/. */
function withCryptid32(macho: Buffer, cryptid: number): Buffer {
  const copy = Buffer.from(macho);
  // mach_header is 28 bytes; ncmds at 16. encryption_info_command: cmd, cmdsize, cryptoff, cryptsize, cryptid (16).
  for (let i = 0, at = 28; i < copy.readUInt32LE(16); i++, at += copy.readUInt32LE(at + 4)) {
    if (copy.readUInt32LE(at) === 0x21) {
      copy.writeUInt32LE(cryptid, at + 16);
      return copy;
    }
  }
  throw new Error('no LC_ENCRYPTION_INFO');
}

describe.skipIf(skip)('armv7', () => {
  it('parses a 32-bit executable: LC_SEGMENT and LC_ENCRYPTION_INFO', () => {
    const [slice] = parseMachO(readFileSync(armv7Path)).slices;
    expect(slice).toMatchObject({ arch: 'armv7', is64: false, headerSizeBytes: 28, fileType: 2, cryptid: 0 });
    expect(slice!.encryptionCommandOffset).toBeGreaterThan(0);
    expect(slice!.segments.map((s) => s.name)).toEqual(['__PAGEZERO', '__TEXT', '__LINKEDIT']);
    expect(parseMachO(withCryptid32(readFileSync(armv7Path), 1)).slices[0]!.cryptid).toBe(1);
  });

  it('signs it, growing __LINKEDIT to a 4 KiB multiple as llvm-objdump reads it', () => {
    const signed = signMachO(readFileSync(armv7Path), 'app', input).bytes;
    const [signature] = readSignatures(signed);
    expect(opensslVerifies(signature!, pki.caPem).ok).toBe(true);
    expect(pageHashesMatch(signed, signature!)).toBe(true);
    const out = join(dir, 'signed-armv7');
    writeFileSync(out, signed);
    const headers = objdumpHeaders(out);
    expect(headers).toContain('LC_CODE_SIGNATURE');
    const [, vmsize, fileoff, filesize] =
      /segname __LINKEDIT\s+vmaddr \S+\s+vmsize (\S+)\s+fileoff (\d+)\s+filesize (\d+)/.exec(headers)!;
    expect(Number(fileoff) + Number(filesize)).toBe(signed.length);
    expect(Number(vmsize) % 0x1000).toBe(0);
    expect(Number(vmsize)).toBeGreaterThanOrEqual(Number(filesize));
  });

  it('signs both slices of an armv7 + arm64 fat file, each at its alignment', () => {
    const fatPath = join(dir, 'legacy-fat');
    lipoCreate([armv7Path, arm64Path], fatPath);
    const fat = readFileSync(fatPath);
    const signed = signMachO(fat, 'app', input).bytes;
    // fat_arch: offset (8) and align (16, log2) of each entry after the 8-byte fat_header.
    const alignments = [0, 1].map((i) => [
      signed.readUInt32BE(8 + i * 20 + 8),
      2 ** signed.readUInt32BE(8 + i * 20 + 16),
    ]);
    expect(alignments.map(([offset, align]) => offset! % align!)).toEqual([0, 0]);
    const signatures = readSignatures(signed);
    expect(signatures).toHaveLength(2);
    for (const signature of signatures) {
      expect(opensslVerifies(signature, pki.caPem).ok).toBe(true);
      expect(pageHashesMatch(signed, signature)).toBe(true);
    }
    expect(parseMachO(signed).slices.map((s) => [s.arch, s.cryptid])).toEqual([
      ['armv7', 0],
      ['arm64', 0],
    ]);
  });

  it('refuses a fat file with one encrypted slice, naming it, before writing anything: MACHO_ENCRYPTED', () => {
    const encrypted = join(dir, 'app-armv7-encrypted');
    writeFileSync(encrypted, withCryptid32(readFileSync(armv7Path), 1));
    const fatPath = join(dir, 'legacy-fat-encrypted');
    lipoCreate([encrypted, arm64Path], fatPath);
    const fat = readFileSync(fatPath);
    expect(parseMachO(fat).slices.map((s) => [s.arch, s.cryptid])).toEqual([
      ['armv7', 1],
      ['arm64', 0],
    ]);
    expect(() => signMachO(fat, 'Payload/App.app/App', input)).toThrow(
      new IpaError(
        'MACHO_ENCRYPTED',
        'Expected Payload/App.app/App (armv7) to be decrypted (cryptid 0), found cryptid 1: decrypt the version first.',
      ),
    );
  });
});
