/**
 * The n-th sign of a version: with its digests, code and copied stretch kept (cacheDir), a sign
 * for another profile or certificate reads none of what it copies, and its output is what a full
 * sign writes: every page hash, special slot, CodeResources hash and CMS checks out, and with the
 * same clock, identity and profile it is the first sign's output byte for byte.
 */
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadIdentity, type SigningIdentity } from '../identity.js';
import { parsePlist } from '../plist.js';
import { EXECUTABLE_MODE, buildZip } from '../test-support/build-zip.js';
import { readFixtureEntries } from '../test-support/read-fixture.js';
import { createTestPki, type TestPki } from '../test-support/pki.js';
import { missingTools } from '../test-support/system-tools.js';
import { buildDataObject, buildExecutable } from '../test-support/toolchain.js';
import {
  opensslVerifies,
  pageHashesMatch,
  readSignatures,
  specialSlotMatches,
} from '../test-support/verify-signature.js';
import { centralFieldsOf, openZip } from '../zip/index.js';
import { DEFAULT_DEFLATE_LEVEL } from '../zip/writer.js';
import { keepCodeAhead } from './code-ahead.js';
import { createMachOSigner } from './engine.js';
import { signIpa } from './sign-ipa.js';
import { warmDigestCache } from './warm.js';

const APP = 'Payload/very-capable-app.app';
const EXECUTABLE = `${APP}/very-capable-app`;
const NOW = new Date('2026-03-01T12:34:56Z');
let dir = '';
let input: string;
let pki: TestPki;
let otherPki: TestPki;

/**
 * Pages that differ from each other (each starts with 128 bytes of its own) but compress well, so
 * the executable spans several of the signer's 1 MiB chunks and its kept build stays small.
 */
function pagedData(pages: number): Buffer {
  const data = Buffer.alloc(pages * 4096, 'sideport page filler ');
  let state = 0x9e3779b9;
  for (let page = 0; page < pages; page++) {
    for (let at = page * 4096; at < page * 4096 + 128; at += 4) {
      // xorshift32: the same bytes on every run, so the build is kept in fixtures/macho.
      state ^= state << 13;
      state ^= state >>> 17;
      state ^= state << 5;
      data.writeUInt32LE(state >>> 0, at);
    }
  }
  return data;
}

/** Outside CI a machine without openssl (the test PKI and the CMS check) skips this file with one line. */
const skip = missingTools('openssl');

beforeAll(async () => {
  if (skip) return;
  dir = mkdtempSync(path.join(tmpdir(), 'ipa-nth-'));
  mkdirSync(path.join(dir, 'a'));
  mkdirSync(path.join(dir, 'b'));
  pki = createTestPki(path.join(dir, 'a'));
  otherPki = createTestPki(path.join(dir, 'b'), 'OTHER12345');
  const blob = buildDataObject(dir, 'pages', pagedData(3 * 256 + 17));
  const source = 'extern const unsigned char blob[];\nint main(void) { return blob[0]; }\n';
  const executable = readFileSync(buildExecutable(dir, 'large', source, { objects: [blob] }));
  const entries = (await readFixtureEntries()).map((entry) =>
    entry.name === EXECUTABLE ? { ...entry, data: executable, mode: EXECUTABLE_MODE } : entry,
  );
  input = path.join(dir, 'large.ipa');
  writeFileSync(input, buildZip(entries));
});
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

let signs = 0;
/** Signs the IPA, streaming binaries above 64 KiB as a large one is, and answers the output's path. */
async function signWith(
  identity: SigningIdentity,
  profile: Buffer,
  cacheDir: string | undefined,
  from = input,
): Promise<string> {
  const output = path.join(dir, `out-${signs++}.ipa`);
  await signIpa({
    input: from,
    output,
    identity,
    profile,
    signer: createMachOSigner(identity, () => NOW),
    now: NOW,
    ...(cacheDir === undefined ? {} : { cacheDir }),
    streamAboveBytes: 64 * 1024,
  });
  return output;
}

/**
 * A copy of the IPA with the stored bytes of its executable past the first 64 KiB, and of every
 * resource (or only of the entry named `only`), overwritten with zeros; its central directory, and so every name, size and CRC-32, as
 * it was. Planning still reads the plists, the old seal and profile, and the first bytes of files
 * that may be code (no extension: PkgInfo), so those stay.
 */
async function withDataZeroed(ipa: string, only?: string): Promise<string> {
  const bytes = readFileSync(ipa);
  const archive = await openZip(ipa);
  try {
    for (const entry of archive.entries) {
      if (
        entry.isDirectory ||
        !/\.\w+$|\/very-capable-app$/.test(entry.name) ||
        /\.(plist|mobileprovision)$/.test(entry.name) ||
        (only !== undefined && entry.name !== only)
      )
        continue;
      const local = centralFieldsOf(entry).relativeOffsetOfLocalHeader;
      const start = local + 30 + bytes.readUInt16LE(local + 26) + bytes.readUInt16LE(local + 28);
      const skip = entry.name === EXECUTABLE ? 64 * 1024 : 0;
      bytes.fill(0, start + Math.min(skip, entry.compressedSizeBytes), start + entry.compressedSizeBytes);
    }
  } finally {
    archive.close();
  }
  const copy = path.join(dir, `zeroed-${signs}.ipa`);
  writeFileSync(copy, bytes);
  return copy;
}

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

/** The signed executable, Info.plist and CodeResources of an output. */
async function signedFiles(output: string) {
  const archive = await openZip(output);
  try {
    const read = (name: string) => archive.readEntry(archive.find(name)!);
    return {
      executable: await read(EXECUTABLE),
      info: await read(`${APP}/Info.plist`),
      codeResources: await read(`${APP}/_CodeSignature/CodeResources`),
      profile: await read(`${APP}/embedded.mobileprovision`),
      names: archive.entries.map((entry) => entry.name).sort(),
    };
  } finally {
    archive.close();
  }
}

/** Every check an outside verifier makes of the app's executable signature. */
async function expectVerifies(output: string, owner: TestPki, profile: Buffer) {
  const files = await signedFiles(output);
  const [signature] = readSignatures(files.executable);
  expect(pageHashesMatch(files.executable, signature!)).toBe(true);
  expect(specialSlotMatches(signature!, 1, files.info)).toBe(true);
  expect(specialSlotMatches(signature!, 3, files.codeResources)).toBe(true);
  expect(opensslVerifies(signature!, owner.caPem).ok).toBe(true);
  // The app supports iOS 14 only: SHA-256 alone (sign/digest-choice.ts).
  expect(signature!.codeDirectories.map((cd) => cd.teamId)).toEqual([owner.teamId]);
  expect(files.profile.equals(profile)).toBe(true);
  // The seal names this user's profile (from a kept template, the entry written into it).
  const seal = parsePlist(files.codeResources) as {
    files: Record<string, Uint8Array>;
    files2: Record<string, { hash2: Uint8Array }>;
  };
  const hex = (bytes: Uint8Array | undefined) => Buffer.from(bytes ?? []).toString('hex');
  expect(hex(seal.files['embedded.mobileprovision'])).toBe(createHash('sha1').update(profile).digest('hex'));
  expect(hex(seal.files2['embedded.mobileprovision']?.hash2)).toBe(
    createHash('sha256').update(profile).digest('hex'),
  );
}

describe.skipIf(skip)('the n-th sign of a version', () => {
  it('keeps the code and copied stretch, and signs again from them with the same result as in full', async () => {
    const cacheDir = path.join(dir, 'cache');
    const a = loadIdentity({ p12: pki.p12, password: pki.password });
    const profileA = pki.profile();
    const profileB = pki.profile({ appId: `${pki.teamId}.org.fastlane.very-capable-app` });

    const first = await signWith(a, profileA, cacheDir);
    await expectVerifies(first, pki, profileA);
    // The first sign keeps the executable's code and the digests; a version signed once costs no copy.
    expect(readdirSync(path.join(cacheDir, 'code')).filter((n) => n.endsWith('.json'))).toHaveLength(1);
    expect(existsSync(path.join(cacheDir, 'copies'))).toBe(false);
    expect(readdirSync(path.join(cacheDir, 'seals'))).toHaveLength(1);

    // Another user's profile: from the kept code, and it keeps the copied stretch.
    const second = await signWith(a, profileB, cacheDir);
    await expectVerifies(second, pki, profileB);
    expect(readdirSync(path.join(cacheDir, 'copies'))).toHaveLength(1);

    // Another certificate and team, from everything kept.
    const b = loadIdentity({ p12: otherPki.p12, password: otherPki.password });
    const otherProfile = otherPki.profile();
    const third = await signWith(b, otherProfile, cacheDir);
    await expectVerifies(third, otherPki, otherProfile);
    expect((await signedFiles(third)).names).toEqual((await signedFiles(first)).names);

    // The first user again, with the same clock: the full sign's bytes exactly, though the
    // executable's code and every copied entry's bytes are gone from the input: none of them is read.
    const again = await signWith(a, profileA, cacheDir, await withDataZeroed(input));
    expect(sha256(again)).toBe(sha256(first));
  });

  it('prepares from the archive exactly what a full sign of the executable keeps', async () => {
    const a = loadIdentity({ p12: pki.p12, password: pki.password });
    const inFull = path.join(dir, 'kept-in-full');
    await signWith(a, pki.profile(), inFull);
    const ahead = path.join(dir, 'kept-ahead');
    const archive = await openZip(input);
    try {
      const options = { appNeedsSha1: false, level: DEFAULT_DEFLATE_LEVEL };
      expect(await keepCodeAhead(ahead, archive, archive.find(EXECUTABLE)!, options)).toBe(true);
      // Code that ends within the signer's first chunk is left to the full sign.
      expect(await keepCodeAhead(ahead, archive, archive.find(`${APP}/Info.plist`)!, options)).toBe(false);
    } finally {
      archive.close();
    }
    const files = (folder: string) => readdirSync(path.join(folder, 'code')).sort();
    expect(files(ahead)).toEqual(files(inFull));
    expect(files(ahead)).toHaveLength(3);
    for (const name of files(ahead))
      expect(readFileSync(path.join(ahead, 'code', name))).toEqual(
        readFileSync(path.join(inFull, 'code', name)),
      );
  });

  it("keeps the executable's code when a version is warmed, so its first sign reads none of it", async () => {
    const cacheDir = path.join(dir, 'warmed');
    const warmed = await warmDigestCache(input, { cacheDir, streamAboveBytes: 64 * 1024 });
    expect(warmed.codeKept).toBe(true);
    expect((await warmDigestCache(input, { cacheDir, streamAboveBytes: 64 * 1024 })).codeKept).toBe(true);
    const a = loadIdentity({ p12: pki.p12, password: pki.password });
    const profile = pki.profile();
    const inFull = await signWith(a, profile, undefined);
    const first = await signWith(a, profile, cacheDir, await withDataZeroed(input, EXECUTABLE));
    expect(sha256(first)).toBe(sha256(inFull));
    await expectVerifies(first, pki, profile);
  });

  it('keeps one copied stretch when many users sign a version at once, and every output verifies', async () => {
    const cacheDir = path.join(dir, 'crowd');
    const a = loadIdentity({ p12: pki.p12, password: pki.password });
    await signWith(a, pki.profile(), cacheDir);
    const profiles = [1, 2, 3, 4].map((n) => pki.profile({ appId: `${pki.teamId}.user${n}` }));
    const outputs = await Promise.all(profiles.map((profile) => signWith(a, profile, cacheDir)));
    for (const [i, output] of outputs.entries()) await expectVerifies(output, pki, profiles[i]!);
    expect(readdirSync(path.join(cacheDir, 'copies'))).toHaveLength(1);
  });

  it('starts copying the stretch before opening the same file again, and signs as in full whatever the note names', async () => {
    const cacheDir = path.join(dir, 'ahead');
    const a = loadIdentity({ p12: pki.p12, password: pki.password });
    const profiles = [0, 1, 2].map((n) => pki.profile({ appId: `${pki.teamId}.ahead${n}` }));
    await signWith(a, profiles[0]!, cacheDir);
    // The second sign keeps the stretch, and notes it for this very file in this mode.
    await signWith(a, profiles[1]!, cacheDir);
    const [stretch] = readdirSync(path.join(cacheDir, 'copies'));
    const notes = readdirSync(path.join(cacheDir, 'copy-ahead'));
    expect(notes).toHaveLength(1);
    const note = path.join(cacheDir, 'copy-ahead', notes[0]!);
    const [identity, named] = readFileSync(note, 'utf8').split('\n');
    expect(named).toBe(stretch);

    // From the copy started ahead: a sign in full's bytes.
    const inFull = sha256(await signWith(a, profiles[2]!, undefined));
    expect(sha256(await signWith(a, profiles[2]!, cacheDir))).toBe(inFull);
    // A note naming a stretch that is gone, or a path: the stretch found is used, and noted again.
    for (const wrong of [`${'0'.repeat(64)}.zip-prefix`, '../../../etc/passwd']) {
      writeFileSync(note, `${identity}\n${wrong}`);
      const output = await signWith(a, profiles[2]!, cacheDir);
      expect(sha256(output)).toBe(inFull);
      await expectVerifies(output, pki, profiles[2]!);
      expect(readFileSync(note, 'utf8')).toBe(`${identity}\n${stretch}`);
    }
    // A source copied afresh for each sign (object storage) replaces the mode's one note.
    for (let copy = 0; copy < 2; copy++) {
      const fresh = path.join(dir, `fresh-${copy}.ipa`);
      writeFileSync(fresh, readFileSync(input));
      expect(sha256(await signWith(a, profiles[2]!, cacheDir, fresh))).toBe(inFull);
    }
    expect(readdirSync(path.join(cacheDir, 'copy-ahead'))).toEqual(notes);
    expect(readFileSync(note, 'utf8').split('\n')[0]).not.toBe(identity);

    // A sign that fails after the copy started leaves no partial output behind.
    const failed = path.join(dir, 'failed-ahead');
    mkdirSync(failed);
    await expect(
      signIpa({
        input,
        output: path.join(failed, 'out.ipa'),
        identity: a,
        profile: profiles[2]!,
        signer: createMachOSigner(a, () => NOW),
        now: NOW,
        cacheDir,
        maxBinaryBytes: 16,
      }),
    ).rejects.toThrow();
    expect(readdirSync(failed)).toEqual([]);
    expect(readdirSync(dir).filter((name) => name.includes('.partial-'))).toEqual([]);
  });

  it('signs in full, with the same result, when what was kept is damaged', async () => {
    const cacheDir = path.join(dir, 'damaged');
    const a = loadIdentity({ p12: pki.p12, password: pki.password });
    const profileA = pki.profile();
    const first = await signWith(a, profileA, cacheDir);
    await signWith(a, pki.profile({ appId: `${pki.teamId}.other` }), cacheDir);
    for (const folder of ['code', 'copies', 'seals']) {
      for (const name of readdirSync(path.join(cacheDir, folder)).filter((n) => !n.endsWith('.json')))
        truncateSync(path.join(cacheDir, folder, name), 100);
    }
    const again = await signWith(a, profileA, cacheDir);
    expect(sha256(again)).toBe(sha256(first));
    await expectVerifies(again, pki, profileA);
  });
});
