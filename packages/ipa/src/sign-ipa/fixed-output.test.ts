/**
 * Signing is deterministic: with a fixed clock, identity and profile, every mode's output is the
 * same bytes on every run. The digests below were taken before the signer's I/O was reworked for
 * speed, and changed since on purpose twice: copied directories keep the archive's own times rather
 * than the clock's (so every sign of a version copies the same bytes), and the fixture, built for
 * iOS 11.2, is signed with SHA-256 alone as codesign signs it (sign/digest-choice.ts). A change to them must be intended and explained in its commit.
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
  'mode 0': 'c0bd0f8e199e7ae1b0f8473df76323fe128048303bc2551de3631545ad1bc745',
  'mode 1': 'b667ca474aa471498522ac2c5d1513c7ce885f30deb8eb54573682326fdf8255',
  'mode 2': '01cd8e082e68d298e971cf667827de7f5bbd18904f5c3112de42a14257d7ad30',
  'mode 3': '8b8b879d8338b1df7a1cb6a6a9d90057ee157a781e4297b1c241cec6e7b77d02',
  'mode 4': 'e498c6a542d77aae6c85d25c79000529b89dbf10661e9e8ba10fe363e41f8a73',
  'mode 0, executable streamed': '22fa54bfb6cae35169bce0bf38148890493fbd2e9c779a8c83710c2b3f8df6ac',
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
