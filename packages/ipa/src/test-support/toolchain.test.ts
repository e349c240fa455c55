import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseMachO } from '../macho/parse.js';
import { asArm64e } from './macho-bytes.js';
import {
  HELPER_SOURCE,
  MACHO_FIXTURES,
  MAIN_SOURCE,
  PLAIN_MAIN_SOURCE,
  buildDylib,
  buildExecutable,
  buildFat,
  fatOf,
} from './toolchain.js';

const dir = mkdtempSync(join(tmpdir(), 'ipa-toolchain-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// With no PATH, clang, ld64.lld and llvm-lipo cannot start: whatever is built comes from fixtures/macho.
describe.runIf(process.env.MACHO_FIXTURES !== 'record')(
  'the test binaries on a machine with only Node.js',
  () => {
    let path: string | undefined;
    beforeEach(() => {
      path = process.env.PATH;
      process.env.PATH = '';
    });
    afterEach(() => {
      process.env.PATH = path;
    });

    it('come from the committed fixtures, with no compiler or linker run', () => {
      expect(readdirSync(MACHO_FIXTURES)).toContain('TOOLS.txt');
      // What src/macho/parse.test.ts and reader.test.ts build.
      const helper = buildDylib(dir, 'helper', HELPER_SOURCE, '@rpath/libhelper.dylib');
      const app = buildExecutable(dir, 'app', MAIN_SOURCE, {
        link: [helper],
        rpaths: ['@executable_path/Frameworks'],
      });
      const plain = buildExecutable(dir, 'plain', PLAIN_MAIN_SOURCE);
      const arm64e = join(dir, 'plain-e');
      writeFileSync(arm64e, asArm64e(readFileSync(plain)));
      const fat = buildFat(dir, 'plain', [plain, arm64e]);
      for (const file of [helper, app, plain])
        expect(parseMachO(readFileSync(file)).slices.map((s) => s.arch)).toEqual(['arm64']);
      expect(parseMachO(readFileSync(fat)).slices.map((s) => s.arch)).toEqual(['arm64', 'arm64e']);
    });

    it('lays out a fat file as llvm-lipo does when llvm-lipo is missing', () => {
      const plain = buildExecutable(dir, 'plain', PLAIN_MAIN_SOURCE);
      const arm64e = join(dir, 'plain-e');
      writeFileSync(arm64e, asArm64e(readFileSync(plain)));
      const byLipo = readFileSync(buildFat(dir, 'plain', [plain, arm64e]));
      expect(fatOf([readFileSync(plain), readFileSync(arm64e)]).equals(byLipo)).toBe(true);
    });

    it('says how to make one the fixtures lack', () => {
      expect(() => buildExecutable(dir, 'new', 'int main(void) { return 12345; }\n')).toThrow(
        /clang is not installed and fixtures\/macho has no build for this test's binary: run packages\/ipa\/scripts\/build-macho-fixtures\.sh/,
      );
    });
  },
);
