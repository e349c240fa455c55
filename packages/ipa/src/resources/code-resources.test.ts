import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildXmlPlist, parsePlist, type PlistObject } from '../plist.js';
import {
  buildCodeResources,
  buildSealTemplate,
  fillSealTemplate,
  type SealedFile,
  type SealedNested,
} from './code-resources.js';
import { rulesPlist, RULES_V1, RULES_V2 } from './rules.js';
import { fixtureIpa } from '../test-support/fixtures.js';
import { missingTools } from '../test-support/system-tools.js';

/** Outside CI a machine without these skips this file with one line saying so. */
const skip = missingTools('unzip');

function walk(root: string, dir = ''): string[] {
  return readdirSync(path.join(root, dir)).flatMap((name) => {
    const rel = dir ? `${dir}/${name}` : name;
    return statSync(path.join(root, rel)).isDirectory() ? walk(root, rel) : [rel];
  });
}

const digest = (algo: string, bytes: Buffer) => createHash(algo).update(bytes).digest();

describe.skipIf(skip)('buildCodeResources', () => {
  let dir: string;
  let app: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'ipa-resources-'));
    execFileSync('unzip', ['-q', fixtureIpa, '-d', dir]);
    app = path.join(dir, 'Payload/very-capable-app.app');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("reproduces the files and files2 seals of Xcode's own CodeResources for a real app", () => {
    const files: SealedFile[] = walk(app)
      .filter((p) => p !== 'very-capable-app' && !p.startsWith('_CodeSignature/'))
      .map((p) => {
        const bytes = readFileSync(path.join(app, p));
        return { path: p, sha1: digest('sha1', bytes), sha256: digest('sha256', bytes) };
      });
    const ours = parsePlist(buildCodeResources(files)) as PlistObject;
    const xcode = parsePlist(readFileSync(path.join(app, '_CodeSignature/CodeResources'))) as PlistObject;
    const asHex = (v: unknown): unknown =>
      v instanceof Uint8Array
        ? Buffer.from(v).toString('hex')
        : v && typeof v === 'object'
          ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, asHex(x)]))
          : v;
    expect(asHex(ours.files)).toEqual(asHex(xcode.files));
    expect(asHex(ours.files2)).toEqual(asHex(xcode.files2));
    expect(Object.keys(ours.rules2 as object).sort()).toEqual(Object.keys(xcode.rules2 as object).sort());
  });

  it('seals nested code by cdhash and leaves its insides to its own signature', () => {
    const file = (p: string): SealedFile => ({
      path: p,
      sha1: digest('sha1', Buffer.from(p)),
      sha256: digest('sha256', Buffer.from(p)),
    });
    const cdhash = Buffer.alloc(20, 7);
    const plist = parsePlist(
      buildCodeResources(
        [
          file('Frameworks/Foo.framework/Foo'),
          file('Frameworks/Foo.framework/Info.plist'),
          file('en.lproj/Main.strings'),
          file('Info.plist'),
        ],
        [{ path: 'Frameworks/Foo.framework', cdhash, requirement: 'identifier "com.example.Foo"' }],
      ),
    ) as PlistObject;
    const files2 = plist.files2 as PlistObject;
    expect(Object.keys(files2).sort()).toEqual(['Frameworks/Foo.framework', 'en.lproj/Main.strings']);
    expect(files2['Frameworks/Foo.framework']).toEqual({
      cdhash: new Uint8Array(cdhash),
      requirement: 'identifier "com.example.Foo"',
    });
    expect((files2['en.lproj/Main.strings'] as PlistObject).optional).toBe(true);
    // v1 lists every file, nested ones included, and the lproj file as optional.
    expect(Object.keys(plist.files as object).sort()).toEqual([
      'Frameworks/Foo.framework/Foo',
      'Frameworks/Foo.framework/Info.plist',
      'Info.plist',
      'en.lproj/Main.strings',
    ]);
  });

  it('lays out exactly the bytes the generic plist writer gives the same seals, odd names included', () => {
    const file = (p: string): SealedFile => ({
      path: p,
      sha1: digest('sha1', Buffer.from(p)),
      sha256: digest('sha256', Buffer.from(p)),
    });
    // Integer-like names come first in a JS object; '&', '<' and '>' are escaped.
    const files = ['b&<>.bin', '10', 'a.bin', '2', 'Ünïcode.txt'].map(file);
    const sorted = [...files].sort((a, b) => (a.path < b.path ? -1 : 1));
    const seal = (pick: (f: SealedFile) => PlistObject | Buffer) =>
      Object.fromEntries(sorted.map((f) => [f.path, pick(f)]));
    const expected = buildXmlPlist({
      files: seal((f) => f.sha1),
      files2: seal((f) => ({ hash: f.sha1, hash2: f.sha256 })),
      rules: rulesPlist(RULES_V1),
      rules2: rulesPlist(RULES_V2),
    });
    expect(buildCodeResources(files).toString('utf8')).toBe(expected);
  });
});

describe('a seal template', () => {
  const file = (p: string, salt = ''): SealedFile => ({
    path: p,
    sha1: digest('sha1', Buffer.from(p + salt)),
    sha256: digest('sha256', Buffer.from(p + salt)),
  });
  const code = (p: string, requirement: string): SealedNested => ({
    path: p,
    cdhash: digest('sha1', Buffer.from(p + requirement)),
    requirement,
  });
  const shared = [
    'Assets.car',
    '10',
    'en.lproj/Main.strings',
    'b&<>.bin',
    'Frameworks/Foo.framework/Info.plist',
  ];
  const own = ['embedded.mobileprovision', '2', 'fr.lproj/Local.strings', 'Frameworks/Foo.framework/Foo'];
  const changing = new Set([...own, 'Frameworks/Foo.framework']);

  it("is filled with another sign's entries into the bytes a full layout of them gives", () => {
    const first = buildSealTemplate(
      [...shared, ...own].map((p) => file(p)),
      [code('Frameworks/Foo.framework', 'identifier "foo" and anchor apple generic')],
      changing,
    );
    expect(first.bytes).toEqual(
      buildCodeResources(
        [...shared, ...own].map((p) => file(p)),
        [code('Frameworks/Foo.framework', 'identifier "foo" and anchor apple generic')],
      ),
    );
    // Another user: another profile, other signed code, a requirement of another length.
    const ownFiles = own.map((p) => file(p, 'user 2'));
    const nested = [code('Frameworks/Foo.framework', 'identifier "foo" and certificate leaf = H"00ff"')];
    const filled = fillSealTemplate(
      first.template,
      new Map(ownFiles.map((f) => [f.path, f])),
      new Map(nested.map((n) => [n.path, n])),
    );
    expect(filled?.toString('utf8')).toBe(
      buildCodeResources([...shared.map((p) => file(p)), ...ownFiles], nested).toString('utf8'),
    );
    // Only the changing entries are left out of what is kept.
    expect(first.template.body.toString('utf8')).toContain('<key>Assets.car</key>');
    expect(first.template.body.toString('utf8')).not.toContain('<key>embedded.mobileprovision</key>');
  });

  it('is not filled when one of its entries is missing', () => {
    const { template } = buildSealTemplate(
      [...shared, ...own].map((p) => file(p)),
      [code('Frameworks/Foo.framework', '')],
      changing,
    );
    const ownFiles = own.slice(1).map((p) => file(p, 'user 2'));
    expect(
      fillSealTemplate(
        template,
        new Map(ownFiles.map((f) => [f.path, f])),
        new Map([['Frameworks/Foo.framework', code('Frameworks/Foo.framework', '')]]),
      ),
    ).toBeUndefined();
  });
});
