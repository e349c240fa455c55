import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { check, type CheckProgress } from './check.js';
import { IpaError } from './errors.js';
import { buildXmlPlist, parsePlistDict } from './plist.js';
import { buildZip, withEntry, type TestZipEntry } from './test-support/build-zip.js';
import { fixtureExecutablePath, fixtureIpa } from './test-support/fixtures.js';
import {
  asArm64e,
  findCryptidOffset,
  withCryptid,
  withExtraEncryptionCommand,
} from './test-support/macho-bytes.js';
import { PLAIN_MAIN_SOURCE, buildExecutable, buildFat } from './test-support/toolchain.js';
import { readFixtureEntries } from './test-support/read-fixture.js';

const app = 'Payload/very-capable-app.app';
let dir: string;
let fixtureEntries: TestZipEntry[];
let executable: Buffer;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ipa-check-'));
  fixtureEntries = await readFixtureEntries();
  executable = fixtureEntries.find((e) => e.name === fixtureExecutablePath)!.data as Buffer;
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The fixture IPA with some entries replaced or added (with a Unix mode, 0 for none, when given as a pair). */
async function variant(
  name: string,
  changes: Record<string, Buffer | string | [Buffer, number]>,
): Promise<string> {
  const entries: TestZipEntry[] = fixtureEntries.map((entry) =>
    entry.name in changes ? { ...entry, data: changes[entry.name] as Buffer } : entry,
  );
  for (const [entryName, change] of Object.entries(changes)) {
    if (entries.some((e) => e.name === entryName)) continue;
    entries.push(
      Array.isArray(change)
        ? { name: entryName, data: change[0], mode: change[1] }
        : { name: entryName, data: change },
    );
  }
  const path = join(dir, name);
  await writeFile(path, buildZip(entries));
  return path;
}

/** A fat file (fat_header, one fat_arch for arm64) whose one slice is `slice`, with the table's entry overridden. */
function fatOf(slice: Buffer, entry: { offset: number; size: number }): Buffer {
  const header = Buffer.alloc(16384);
  // fat_header: magic, nfat_arch; fat_arch: cputype, cpusubtype, offset, size, align (big-endian)
  header.writeUInt32BE(0xcafebabe, 0);
  header.writeUInt32BE(1, 4);
  header.writeUInt32BE(0x0100000c, 8);
  header.writeUInt32BE(0, 12);
  header.writeUInt32BE(entry.offset, 16);
  header.writeUInt32BE(entry.size, 20);
  header.writeUInt32BE(14, 24);
  return Buffer.concat([header, slice]);
}

describe('check', () => {
  it('reports the real fixture IPA as decrypted', async () => {
    expect(findCryptidOffset(executable)).toBeDefined();
    expect(await check(fixtureIpa)).toEqual({
      bundleId: 'org.fastlane.very-capable-app',
      shortVersion: '1.0',
      bundleVersion: '1',
      minimumOsVersion: '11.2',
      executable: 'very-capable-app',
      sizeBytes: 20076,
      machOs: [{ path: fixtureExecutablePath, slices: [{ arch: 'arm64', cryptid: 0 }] }],
      decrypted: true,
    });
  });

  it('reports a copy whose executable has cryptid 1 as encrypted', async () => {
    const path = await variant('encrypted.ipa', { [fixtureExecutablePath]: withCryptid(executable, 1) });
    const report = await check(path);
    expect(report.machOs).toEqual([{ path: fixtureExecutablePath, slices: [{ arch: 'arm64', cryptid: 1 }] }]);
    expect(report.decrypted).toBe(false);
  });

  it('finds frameworks, dylibs and app extensions, and one encrypted among them decides', async () => {
    const path = await variant('nested.ipa', {
      [`${app}/Frameworks/Kit.framework/Kit`]: executable,
      [`${app}/Frameworks/libHelper.dylib`]: executable,
      [`${app}/PlugIns/Share.appex/Share`]: withCryptid(executable, 1),
    });
    const report = await check(path);
    expect(report.machOs.map((m) => [m.path.slice(app.length + 1), m.slices[0]!.cryptid])).toEqual([
      ['very-capable-app', 0],
      ['Frameworks/Kit.framework/Kit', 0],
      ['Frameworks/libHelper.dylib', 0],
      ['PlugIns/Share.appex/Share', 1],
    ]);
    expect(report.decrypted).toBe(false);
  });

  it('reports a fat executable with one encrypted slice as encrypted', async () => {
    const thin = buildExecutable(dir, 'plain', PLAIN_MAIN_SOURCE);
    const encrypted = join(dir, 'plain-arm64e');
    await writeFile(encrypted, asArm64e(withCryptid(readFileSync(thin), 1)));
    const fat = readFileSync(buildFat(dir, 'plain', [thin, encrypted]));
    const path = await variant('fat.ipa', { [fixtureExecutablePath]: fat });
    const report = await check(path);
    expect(report.machOs).toEqual([
      {
        path: fixtureExecutablePath,
        slices: [
          { arch: 'arm64', cryptid: 0 },
          { arch: 'arm64e', cryptid: 1 },
        ],
      },
    ]);
    expect(report.decrypted).toBe(false);
  });

  describe('finds encrypted code however it is hidden', () => {
    let plain: Buffer;
    beforeAll(() => {
      plain = readFileSync(buildExecutable(dir, 'hidden', PLAIN_MAIN_SOURCE));
    });

    it('reports an executable with two encryption commands, the first cryptid 1 and the last 0, as encrypted', async () => {
      const twice = withExtraEncryptionCommand(withCryptid(plain, 1), 0);
      const path = await variant('two-commands.ipa', { [fixtureExecutablePath]: twice });
      const report = await check(path);
      expect(report.machOs).toEqual([
        { path: fixtureExecutablePath, slices: [{ arch: 'arm64', cryptid: 1 }] },
      ]);
      expect(report.decrypted).toBe(false);
    });

    const hidden: Array<[string, string, number]> = [
      ['a .dat name and mode 0644', `${app}/Frameworks/Hidden.framework/Hidden.dat`, 0o100644],
      ['no Unix mode', `${app}/PlugIns/Ext.appex/Ext.bin`, 0],
      ['a resource name inside _CodeSignature', `${app}/_CodeSignature/CodeRequirements-1`, 0o100644],
      ['a place outside the app bundle', 'Payload/Stray/stray', 0o100755],
    ];
    it.each(hidden)('reports an encrypted Mach-O with %s as encrypted', async (_, name, mode) => {
      const path = await variant('hidden.ipa', { [name]: [withCryptid(plain, 1), mode] });
      const report = await check(path);
      expect(report.machOs).toContainEqual({ path: name, slices: [{ arch: 'arm64', cryptid: 1 }] });
      expect(report.decrypted).toBe(false);
    });

    it('reports the same Mach-O decrypted as decrypted', async () => {
      const path = await variant('hidden-decrypted.ipa', {
        [`${app}/Frameworks/Hidden.framework/Hidden.dat`]: [plain, 0o100644],
      });
      const report = await check(path);
      expect(report.machOs.map((m) => m.path)).toEqual([
        fixtureExecutablePath,
        `${app}/Frameworks/Hidden.framework/Hidden.dat`,
      ]);
      expect(report.decrypted).toBe(true);
    });

    const damaged: Array<[string, () => Buffer, string]> = [
      ['cut short after its magic', () => plain.subarray(0, 6), 'MACHO_TRUNCATED'],
      ['cut short inside its load commands', () => plain.subarray(0, 100), 'MACHO_TRUNCATED'],
      [
        'big-endian',
        () => Buffer.concat([Buffer.from('feedfacf', 'hex'), plain.subarray(4)]),
        'MACHO_UNSUPPORTED',
      ],
      [
        'fat, listing no architectures',
        () => Buffer.concat([Buffer.from('cafebabe00000000', 'hex'), plain]),
        'MACHO_BAD_MAGIC',
      ],
      [
        'fat, with a slice outside the file',
        () => fatOf(plain, { offset: 16384, size: plain.length * 2 }),
        'MACHO_TRUNCATED',
      ],
    ];
    it('refuses an encrypted Mach-O whose headers say it holds no bytes', async () => {
      // Local and central headers agree on an uncompressed size of 0; the deflated data is a whole
      // encrypted binary, which an extractor that follows the deflate stream writes out.
      const zip = withEntry(buildZip(fixtureEntries), {
        name: `${app}/Resources/empty.dat`,
        data: withCryptid(plain, 1),
      });
      const end = zip.length - 22;
      const count = zip.readUInt16LE(end + 10);
      let central = zip.readUInt32LE(end + 16);
      for (let i = 0; i < count - 1; i++)
        central +=
          46 +
          zip.readUInt16LE(central + 28) +
          zip.readUInt16LE(central + 30) +
          zip.readUInt16LE(central + 32);
      zip.writeUInt32LE(0, central + 24);
      zip.writeUInt32LE(0, zip.readUInt32LE(central + 42) + 22);
      const path = join(dir, 'MACHO_TRUNCATED_empty.ipa');
      await writeFile(path, zip);
      const error = await check(path).catch((err: unknown) => err);
      expect(error).toBeInstanceOf(IpaError);
      expect((error as IpaError).code).toBe('MACHO_TRUNCATED');
    });

    it.each(damaged)('refuses a file that starts like a Mach-O but is %s', async (_, bytes, code) => {
      const path = await variant(`${code}.ipa`, { [`${app}/Resources/blob.dat`]: [bytes(), 0o100644] });
      const error = await check(path).catch((err: unknown) => err);
      expect(error).toBeInstanceOf(IpaError);
      expect((error as IpaError).code).toBe(code);
    });
  });

  it('reads an XML Info.plist as well as the binary one', async () => {
    const binary = fixtureEntries.find((e) => e.name === `${app}/Info.plist`)!.data as Buffer;
    const info = parsePlistDict(binary);
    const path = await variant('xml-info.ipa', {
      [`${app}/Info.plist`]: buildXmlPlist({ ...info, CFBundleVersion: '42' }),
    });
    expect(await check(path)).toMatchObject({
      bundleId: 'org.fastlane.very-capable-app',
      bundleVersion: '42',
      decrypted: true,
    });
  });

  it('reports progress once per Mach-O', async () => {
    const events: CheckProgress[] = [];
    await check(fixtureIpa, { onProgress: (event) => events.push(event) });
    expect(events).toEqual([{ done: 1, total: 1, path: fixtureExecutablePath }]);
  });

  it('refuses a Mach-O larger than the cap: MACHO_TOO_LARGE', async () => {
    await expect(check(fixtureIpa, { maxMachOBytes: 1000 })).rejects.toThrow(
      new IpaError(
        'MACHO_TOO_LARGE',
        `Expected ${fixtureExecutablePath} to be at most 1000 bytes, found ${executable.length}.`,
      ),
    );
  });

  it('refuses an executable that is not a Mach-O: MACHO_BAD_MAGIC', async () => {
    const path = await variant('MACHO_BAD_MAGIC.ipa', {
      [fixtureExecutablePath]: Buffer.from('#!/bin/sh\n'),
    });
    const error = await check(path).catch((err: unknown) => err);
    expect((error as IpaError).code).toBe('MACHO_BAD_MAGIC');
  });

  it('gives IpaError or a report, never a crash, on a damaged fixture IPA', async () => {
    const original = await readFile(fixtureIpa);
    const path = join(dir, 'damaged.ipa');
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.nat(original.length - 1), fc.nat(255)), { minLength: 1, maxLength: 4 }),
        async (edits) => {
          const bytes = Buffer.from(original);
          for (const [at, value] of edits) bytes[at] = value;
          await writeFile(path, bytes);
          try {
            const report = await check(path);
            expect(typeof report.decrypted).toBe('boolean');
          } catch (err) {
            expect(err).toBeInstanceOf(IpaError);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('gives IpaError, never a crash, when the executable is damaged', async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat(4095), fc.nat(255), async (at, value) => {
        const damaged = Buffer.from(executable);
        damaged[at] = value;
        const path = await variant('damaged-executable.ipa', { [fixtureExecutablePath]: damaged });
        try {
          await check(path);
        } catch (err) {
          expect(err).toBeInstanceOf(IpaError);
        }
      }),
      { numRuns: 200 },
    );
  });
});
