import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { IpaError } from '../errors.js';
import { asArm64e, withCryptid } from '../test-support/macho-bytes.js';
import {
  HELPER_SOURCE, MAIN_SOURCE, buildDylib, buildExecutable, buildFat,
} from '../test-support/toolchain.js';
import { isMachOHead, parseMachO } from './parse.js';

const dir = mkdtempSync(join(tmpdir(), 'ipa-macho-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const helper = buildDylib(dir, 'helper', HELPER_SOURCE, '@rpath/libhelper.dylib');
const app = readFileSync(buildExecutable(dir, 'app', MAIN_SOURCE, { link: [helper], rpaths: ['@executable_path/Frameworks'] }));

describe('parseMachO', () => {
  it('reads a thin arm64 executable built by ld64.lld', () => {
    const file = parseMachO(app);
    expect(file.isFat).toBe(false);
    const [slice] = file.slices;
    expect(slice).toMatchObject({ arch: 'arm64', is64: true, fileType: 2, cryptid: 0, offset: 0, size: app.length });
    expect(slice!.dylibs.map((d) => d.name)).toEqual(['@rpath/libhelper.dylib', '/usr/lib/libSystem.B.dylib']);
    expect(slice!.rpaths).toEqual(['@executable_path/Frameworks']);
    expect(slice!.segments.map((s) => s.name)).toEqual(['__PAGEZERO', '__TEXT', '__DATA_CONST', '__DATA', '__LINKEDIT']);
    expect(slice!.encryptionCommandOffset).toBeGreaterThan(0);
    expect(slice!.freeCommandBytes).toBeGreaterThanOrEqual(0x400);
  });

  it('reads the install name of a dylib', () => {
    expect(parseMachO(readFileSync(helper)).slices[0]).toMatchObject({ fileType: 6, installName: '@rpath/libhelper.dylib' });
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
    expect(file.slices.map((s) => [s.arch, s.cryptid])).toEqual([['arm64', 0], ['arm64e', 1]]);
    expect(file.slices[1]!.offset % 0x4000).toBe(0);
  });

  it('refuses a header cut short: MACHO_TRUNCATED', () => {
    expect(() => parseMachO(app.subarray(0, 100))).toThrow(expect.objectContaining({ code: 'MACHO_TRUNCATED' }));
  });

  it('refuses bytes that are not Mach-O: MACHO_BAD_MAGIC', () => {
    expect(() => parseMachO(Buffer.from('#!/bin/sh\necho hi\n'))).toThrow(expect.objectContaining({ code: 'MACHO_BAD_MAGIC' }));
    expect(isMachOHead(Buffer.from('#!/bin/sh\n'))).toBe(false);
    expect(isMachOHead(app)).toBe(true);
  });

  it('gives an IpaError or a result for any corruption of a real header, never a crash', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2047 }), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 64, max: app.length }), (at, value, length) => {
        const copy = Buffer.from(app.subarray(0, length));
        if (at < copy.length) copy[at] = value;
        try {
          parseMachO(copy);
        } catch (err) {
          expect(err).toBeInstanceOf(IpaError);
        }
      }),
      { numRuns: 500 },
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
      }),
    );
  });
});
