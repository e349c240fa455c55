import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseMachO } from '../macho/index.js';
import { HELPER_SOURCE, PLAIN_MAIN_SOURCE, buildDylib, buildExecutable } from '../test-support/toolchain.js';
import { assertMode, injectLoads, planInjection } from './inject.js';

const dir = mkdtempSync(join(tmpdir(), 'ipa-modes-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const substratePath = buildDylib(dir, 'substrate', HELPER_SOURCE, '/Library/Frameworks/CydiaSubstrate.framework/CydiaSubstrate');
const iap = readFileSync(buildDylib(dir, 'iap', 'int helper(int);\nint iap(void) { return helper(2); }\n', '@rpath/libiap.dylib', { link: [substratePath] }));
const igg = readFileSync(buildDylib(dir, 'igg', 'int igg(void) { return 3; }\n', '@rpath/libigg.dylib'));
const app = readFileSync(buildExecutable(dir, 'app', PLAIN_MAIN_SOURCE));
const dylibs = {
  iap: { fileName: 'libiap.dylib', bytes: iap },
  igg: { fileName: 'libigg.dylib', bytes: igg, weak: true },
  substrate: { fileName: 'libsubstrate.dylib', bytes: readFileSync(substratePath) },
};

describe('planInjection', () => {
  it('injects nothing in modes 0 and 4', () => {
    expect(planInjection(0, dylibs)).toEqual({ files: [], loads: [] });
    expect(planInjection(4, dylibs)).toEqual({ files: [], loads: [] });
  });

  it('mode 1 bundles the IAP dylib, points its substrate dependency at the bundled copy', () => {
    const plan = planInjection(1, dylibs);
    expect(plan.files.map((f) => f.path)).toEqual(['Frameworks/libiap.dylib', 'Frameworks/libsubstrate.dylib']);
    expect(plan.loads).toEqual([{ path: '@executable_path/Frameworks/libiap.dylib' }]);
    const deps = parseMachO(plan.files[0]!.bytes).slices[0]!.dylibs.map((d) => d.name);
    expect(deps).toContain('@executable_path/Frameworks/libsubstrate.dylib');
    expect(deps.some((d) => d.includes('CydiaSubstrate'))).toBe(false);
  });

  it('mode 3 injects both, the IGG one weakly as configured', () => {
    const plan = planInjection(3, dylibs);
    expect(plan.loads).toEqual([{ path: '@executable_path/Frameworks/libiap.dylib' }, { path: '@executable_path/Frameworks/libigg.dylib', weak: true }]);
    const injected = injectLoads(app, 'app', plan);
    expect(parseMachO(injected).slices[0]!.dylibs.map((d) => d.name).slice(-2)).toEqual(plan.loads.map((l) => l.path));
  });

  it('refuses a mode whose dylib is not configured: DYLIB_MISSING', () => {
    expect(() => planInjection(2, { iap: dylibs.iap })).toThrow(expect.objectContaining({ code: 'DYLIB_MISSING', message: 'Expected the IGG dylib for mode 2, found none configured.' }));
  });

  it('refuses a dylib that is not Mach-O or has a path for a name', () => {
    expect(() => planInjection(1, { iap: { fileName: 'libiap.dylib', bytes: Buffer.from('not a dylib') } })).toThrow(expect.objectContaining({ code: 'MACHO_BAD_MAGIC' }));
    expect(() => planInjection(1, { iap: { fileName: '../evil.dylib', bytes: iap } })).toThrow(expect.objectContaining({ code: 'DYLIB_MISSING' }));
  });

  it('refuses modes outside 0-4: MODE_INVALID', () => {
    expect(() => assertMode(5)).toThrow(expect.objectContaining({ code: 'MODE_INVALID' }));
  });
});
