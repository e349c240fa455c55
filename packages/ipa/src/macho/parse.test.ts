import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { IpaError } from '../errors.js';
import { asArm64e, withCryptid, withExtraEncryptionCommand } from '../test-support/macho-bytes.js';
import {
  HELPER_SOURCE,
  MAIN_SOURCE,
  buildDylib,
  buildExecutable,
  buildFat,
  objdumpHeaders,
} from '../test-support/toolchain.js';
import { execFileSync } from 'node:child_process';
import { fixtureExecutablePath, fixtureIpa } from '../test-support/fixtures.js';
import { readCodeSignature, readSuperBlobIndex } from './code-signature.js';
import { isMachO, isMachOHead, parseMachO } from './parse.js';
import { missingTools } from '../test-support/system-tools.js';

/** Outside CI a machine without these skips this file with one line saying so. */
const skip = missingTools('unzip', 'llvm-objdump');

const dir = mkdtempSync(join(tmpdir(), 'ipa-macho-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const helper = buildDylib(dir, 'helper', HELPER_SOURCE, '@rpath/libhelper.dylib');
const app = readFileSync(
  buildExecutable(dir, 'app', MAIN_SOURCE, { link: [helper], rpaths: ['@executable_path/Frameworks'] }),
);

/** The real Xcode-signed executable, unzipped with a tool that is not ours. */
function fixtureExecutable(): Buffer {
  const out = join(dir, 'fixture');
  execFileSync('unzip', ['-q', '-o', fixtureIpa, fixtureExecutablePath, '-d', out]);
  return readFileSync(join(out, fixtureExecutablePath));
}

/** Load command names in order, as llvm-objdump prints them ("cmd LC_..."). */
function objdumpCommandNames(path: string): string[] {
  const text = objdumpHeaders(path);
  return [...text.matchAll(/^\s+cmd (LC_\w+)/gm)].map((m) => m[1]!);
}

describe.skipIf(skip)('parseMachO', () => {
  it('reads a thin arm64 executable built by ld64.lld', () => {
    const file = parseMachO(app);
    expect(file.isFat).toBe(false);
    const [slice] = file.slices;
    expect(slice).toMatchObject({
      arch: 'arm64',
      is64: true,
      fileType: 2,
      cryptid: 0,
      offset: 0,
      size: app.length,
    });
    expect(slice!.dylibs.map((d) => d.name)).toEqual([
      '@rpath/libhelper.dylib',
      '/usr/lib/libSystem.B.dylib',
    ]);
    expect(slice!.rpaths).toEqual(['@executable_path/Frameworks']);
    expect(slice!.segments.map((s) => s.name)).toEqual([
      '__PAGEZERO',
      '__TEXT',
      '__DATA_CONST',
      '__DATA',
      '__LINKEDIT',
    ]);
    expect(slice!.encryptionCommandOffset).toBeGreaterThan(0);
    expect(slice!.freeCommandBytes).toBeGreaterThanOrEqual(0x400);
  });

  it('lists every load command llvm-objdump lists, with the header flags', () => {
    const [slice] = parseMachO(app).slices;
    const names = objdumpCommandNames(join(dir, 'app-arm64'));
    expect(slice!.loadCommands).toHaveLength(names.length);
    const codes: Record<string, number> = {
      LC_SEGMENT_64: 0x19,
      LC_LOAD_DYLIB: 0xc,
      LC_RPATH: 0x8000001c,
      LC_ENCRYPTION_INFO_64: 0x2c,
    };
    names.forEach((name, i) => {
      if (codes[name] !== undefined) expect(slice!.loadCommands[i]!.command).toBe(codes[name]);
    });
    // MH_PIE 0x200000 and MH_TWOLEVEL 0x80 are set by every iOS linker.
    expect(slice!.flags & 0x200080).toBe(0x200080);
  });

  it('reads the real Xcode-signed executable: cryptid 0 and its SuperBlob index', () => {
    const bytes = fixtureExecutable();
    const file = parseMachO(bytes, 'very-capable-app');
    const [slice] = file.slices;
    expect(slice).toMatchObject({
      arch: 'arm64',
      fileType: 2,
      cryptid: 0,
      codeSignature: { dataOffset: 54160, dataSize: 12752 },
    });
    expect(slice!.dylibs.map((d) => d.name)).toContain('/usr/lib/libobjc.A.dylib');
    expect(slice!.rpaths).toEqual(['@executable_path/Frameworks']);
    const linkedit = slice!.segments.find((s) => s.name === '__LINKEDIT')!;
    expect(linkedit.fileOffset + linkedit.fileSize).toBe(bytes.length);
    const signature = readCodeSignature(bytes, slice!)!;
    expect(signature.blobs.map((b) => [b.slot, b.magic])).toEqual([
      [0, 0xfade0c02],
      [2, 0xfade0c01],
      [5, 0xfade7171],
      [0x1000, 0xfade0c02],
      [0x10000, 0xfade0b01],
    ]);
  });

  it('reads the install name of a dylib', () => {
    expect(parseMachO(readFileSync(helper)).slices[0]).toMatchObject({
      fileType: 6,
      installName: '@rpath/libhelper.dylib',
    });
  });

  it('reads cryptid 1 after a flip of the encryption load command', () => {
    expect(parseMachO(withCryptid(app, 1)).slices[0]!.cryptid).toBe(1);
  });

  it('reads every slice of a fat file, one of them encrypted', () => {
    // lld 14 cannot target arm64e; relabelling a copy is enough for lipo and for the parser.
    const thinE = asArm64e(withCryptid(app, 1));
    const encryptedE = join(dir, 'app-e-encrypted');
    writeFileSync(encryptedE, thinE);
    const fat = readFileSync(buildFat(dir, 'app', [join(dir, 'app-arm64'), encryptedE]));
    const file = parseMachO(fat);
    expect(file.isFat).toBe(true);
    expect(file.slices.map((s) => [s.arch, s.cryptid])).toEqual([
      ['arm64', 0],
      ['arm64e', 1],
    ]);
    expect(file.slices[1]!.offset % 0x4000).toBe(0);
  });

  it('refuses a header cut short: MACHO_TRUNCATED', () => {
    expect(() => parseMachO(app.subarray(0, 100))).toThrow(
      expect.objectContaining({ code: 'MACHO_TRUNCATED' }),
    );
  });

  it('refuses bytes that are not Mach-O: MACHO_BAD_MAGIC', () => {
    expect(() => parseMachO(Buffer.from('#!/bin/sh\necho hi\n'))).toThrow(
      expect.objectContaining({ code: 'MACHO_BAD_MAGIC' }),
    );
    expect(isMachOHead(Buffer.from('#!/bin/sh\n'))).toBe(false);
    expect(isMachOHead(app)).toBe(true);
  });

  it('knows a Mach-O by its magic alone: fat, and thin in both byte orders', () => {
    const head = (hex: string): Buffer => Buffer.from(hex, 'hex');
    expect(isMachO(head('cafebabe00000002'))).toBe(true);
    expect(isMachO(head('cafebabf00000001'))).toBe(true);
    // Fat magic with a count no fat file has (a Java class file's version, say) is still parsed, and refused.
    expect(isMachO(head('cafebabe00000034'))).toBe(true);
    expect(() => parseMachO(head('cafebabe00000000'))).toThrow(
      expect.objectContaining({ code: 'MACHO_BAD_MAGIC' }),
    );
    for (const magic of ['cffaedfe', 'cefaedfe', 'feedfacf', 'feedface'])
      expect(isMachO(head(magic))).toBe(true);
    expect(isMachO(head('cffaed'))).toBe(false);
    expect(isMachOHead).toBe(isMachO);
  });

  it('reports a slice encrypted when any of its encryption commands says so', () => {
    const twice = withExtraEncryptionCommand(withCryptid(app, 1), 0);
    expect(parseMachO(twice).slices[0]!.cryptid).toBe(1);
    expect(parseMachO(withExtraEncryptionCommand(app, 2)).slices[0]!.cryptid).toBe(2);
    expect(parseMachO(withExtraEncryptionCommand(app, 0)).slices[0]!.cryptid).toBe(0);
  });

  it('refuses a big-endian thin file: MACHO_UNSUPPORTED', () => {
    const be = Buffer.alloc(64);
    be.writeUInt32BE(0xfeedfacf, 0);
    expect(() => parseMachO(be)).toThrow(expect.objectContaining({ code: 'MACHO_UNSUPPORTED' }));
  });

  it('refuses a SuperBlob whose blob runs past its end: SIGNATURE_INVALID', () => {
    const bytes = fixtureExecutable();
    const [slice] = parseMachO(bytes).slices;
    const copy = Buffer.from(bytes);
    // BlobIndex 0's offset (SuperBlob + 16) pointed beyond the SuperBlob's length.
    copy.writeUInt32BE(0x7fffffff, slice!.codeSignature!.dataOffset + 16);
    expect(() => readCodeSignature(copy, slice!)).toThrow(
      expect.objectContaining({ code: 'SIGNATURE_INVALID' }),
    );
  });

  it('gives an IpaError or a result for any corruption of a real header, never a crash', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2047 }),
        fc.integer({ min: 0, max: 255 }),
        fc.integer({ min: 64, max: app.length }),
        (at, value, length) => {
          const copy = Buffer.from(app.subarray(0, length));
          if (at < copy.length) copy[at] = value;
          try {
            parseMachO(copy);
          } catch (err) {
            expect(err).toBeInstanceOf(IpaError);
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('gives an IpaError or a result for any fat header, never a crash', () => {
    fc.assert(
      fc.property(
        fc.boolean(),
        fc.integer({ min: 0, max: 40 }),
        fc.uint8Array({ minLength: 0, maxLength: 200 }),
        (is64, count, rest) => {
          const header = Buffer.alloc(8);
          header.writeUInt32BE(is64 ? 0xcafebabf : 0xcafebabe, 0);
          header.writeUInt32BE(count, 4);
          try {
            parseMachO(Buffer.concat([header, Buffer.from(rest), app.subarray(0, 64)]));
          } catch (err) {
            expect(err).toBeInstanceOf(IpaError);
          }
        },
      ),
    );
  });

  it('gives an IpaError for random bytes, never a crash', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 256 }), (bytes) => {
        try {
          parseMachO(Buffer.from(bytes));
        } catch (err) {
          expect(err).toBeInstanceOf(IpaError);
        }
        try {
          readSuperBlobIndex(Buffer.concat([Buffer.from('fade0cc0', 'hex'), Buffer.from(bytes)]), 'random');
        } catch (err) {
          expect(err).toBeInstanceOf(IpaError);
        }
      }),
    );
  });
});
