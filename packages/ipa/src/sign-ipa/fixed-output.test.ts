/**
 * Signing is deterministic: with a fixed clock, identity and profile, every mode's output is the
 * same bytes on every run. The digests below were taken before the signer's I/O was reworked for
 * speed, and changed once since, on purpose: copied directories keep the archive's own times
 * rather than the clock's (so every sign of a version copies the same bytes); restoring those
 * times gives the earlier digests. A change to them must be intended and explained in its commit.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadIdentity } from '../identity.js';
import { fixtureExecutablePath, fixtureIpa } from '../test-support/fixtures.js';
import { createFixedIdentity } from '../test-support/fixed-identity.js';
import { openZip } from '../zip/index.js';
import { createMachOSigner } from './engine.js';
import type { SignMode } from './modes.js';
import { sign } from './sign.js';
import { signIpa } from './sign-ipa.js';

// New entries carry a DOS date and time, which are local: fix the zone with the clock.
process.env.TZ = 'UTC';
const NOW = new Date('2026-03-01T12:34:56Z');

const EXPECTED: Record<string, string> = {
  'mode 0': 'f81783ea6143ead2a2f08a55366f60e357bce87de4a1a72231ceceaffa8b1d4a',
  'mode 1': '7391c9c2fedf4582e0a3f6bb48db5703a1e0dc556069777fe5041ae01699eb3a',
  'mode 2': '6aab262cac328c5a82e743411519e8f201f54d3f5c0dbb916cb23fc6721614f9',
  'mode 3': '841020ac842d53d733ea62f13420822b9c16138975b1c5df7ac8bdc5086ddf75',
  'mode 4': '985cd8eee7244075449553145548bf41d516965229daf682febaf89e8c8ed390',
  'mode 0, executable streamed': '4c2266a4c972919c66b4e30a6163e4a536f90c1a959aa3ab1264360787a78fe7',
};

const dir = mkdtempSync(path.join(tmpdir(), 'ipa-fixed-'));
const fixed = createFixedIdentity();
const identity = { certPem: fixed.certPem, keyPem: fixed.keyPem };
const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
let dylibBytes: Buffer;

beforeAll(async () => {
  vi.useFakeTimers({ toFake: ['Date'], now: NOW });
  // Any real Mach-O serves as the injected dylib; the fixture's own executable is one that never changes.
  const archive = await openZip(fixtureIpa);
  try {
    dylibBytes = await archive.readEntry(archive.find(fixtureExecutablePath)!);
  } finally {
    archive.close();
  }
});
afterAll(() => {
  vi.useRealTimers();
  rmSync(dir, { recursive: true, force: true });
});

const signMode = async (mode: SignMode, cacheDir?: string): Promise<string> => {
  const output = path.join(
    dir,
    `mode-${mode}-${cacheDir === undefined ? 'plain' : path.basename(cacheDir)}.ipa`,
  );
  await sign({
    input: fixtureIpa,
    output,
    identity,
    profile: fixed.profile,
    mode,
    now: NOW,
    dylibs: {
      iap: { name: 'libiap.dylib', bytes: dylibBytes },
      igg: { name: 'libigg.dylib', bytes: dylibBytes, weak: true },
    },
    ...(mode === 4 ? { bundleIdPrefix: 'com.example.copy' } : {}),
    ...(cacheDir === undefined ? {} : { cacheDir }),
  });
  return sha256(output);
};

describe('signed output with a fixed clock', () => {
  for (const mode of [0, 1, 2, 3, 4] as const) {
    it(`mode ${mode} is byte-identical to the recorded output`, async () => {
      expect(await signMode(mode)).toBe(EXPECTED[`mode ${mode}`]);
    });
  }

  it('is the same whether resource digests are computed or read from the cache, and the copies from a kept stretch', async () => {
    const cacheDir = path.join(dir, 'cache');
    expect(await signMode(0, cacheDir)).toBe(EXPECTED['mode 0']);
    // The second sign reads the digests and keeps the copied stretch; the third starts from it.
    expect(await signMode(0, cacheDir)).toBe(EXPECTED['mode 0']);
    expect(readdirSync(path.join(cacheDir, 'copies'))).toHaveLength(1);
    expect(await signMode(0, cacheDir)).toBe(EXPECTED['mode 0']);
  });

  it('mode 0 with the executable signed as it streams is byte-identical to the recorded output', async () => {
    const output = path.join(dir, 'streamed.ipa');
    const loaded = loadIdentity(identity);
    await signIpa({
      input: fixtureIpa,
      output,
      identity: loaded,
      profile: fixed.profile,
      signer: createMachOSigner(loaded, () => NOW),
      now: NOW,
      streamAboveBytes: 0,
    });
    expect(sha256(output)).toBe(EXPECTED['mode 0, executable streamed']);
  });
});
