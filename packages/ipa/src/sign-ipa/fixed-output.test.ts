/**
 * Signing is deterministic: with a fixed clock, identity and profile, every mode's output is the
 * same bytes on every run. The digests below were taken before the signer's I/O was reworked for
 * speed (issue 13); a change to them must be intended and explained in its commit.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
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
  'mode 0': '649399951ee33c588a71aff36a95b717d9d40dcb4ae86a73846ef889f6bf47ff',
  'mode 1': 'ffa1b22b85ff41073220bde3a41af1dee0f679ca7ed5f15d000d52a6c48ebb25',
  'mode 2': 'c48636d43ddd6270acec1b8f07da953dd9c447fc647e7662d4a0c21dbc1b7da8',
  'mode 3': 'd8d238aacb48440a0a96f4bcd6e8e9ac2be1f7366fa10db8e379d2af5727e24d',
  'mode 4': 'e5a46a631fc4abeb66d6257cedb11d53ca7dca4496c7a50c3602ae1895bf10d2',
  'mode 0, executable streamed': '10adb724600e4d0ec923dd48914235dc5f80d5a7062176452daf5be7954ff23e',
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

  it('is the same whether resource digests are computed or read from the cache', async () => {
    const cacheDir = path.join(dir, 'cache');
    expect(await signMode(0, cacheDir)).toBe(EXPECTED['mode 0']);
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
