import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureIpa } from '../test-support/fixtures.js';
import { createTestPki, type TestPki } from '../test-support/pki.js';
import { sign } from './sign.js';
import { warmDigestCache } from './warm.js';
import { missingTools } from '../test-support/system-tools.js';

/** Outside CI a machine without these skips this file with one line saying so. */
const skip = missingTools('openssl');

const dir = mkdtempSync(path.join(tmpdir(), 'ipa-warm-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let pki: TestPki;
beforeAll(() => {
  pki = createTestPki(dir);
});

const cacheFiles = (cacheDir: string) =>
  readdirSync(path.join(cacheDir, 'resource-digests'))
    .sort()
    .map((name) => `${name} ${statSync(path.join(cacheDir, 'resource-digests', name)).mtimeMs}`);

describe.skipIf(skip)('warmDigestCache', () => {
  it('fills the cache every mode reads, so no sign after it digests anything', async () => {
    const cacheDir = path.join(dir, 'cache');
    expect(await warmDigestCache(fixtureIpa, { cacheDir })).toMatchObject({ fromCache: false });
    const warmed = cacheFiles(cacheDir);
    // Modes 0-3 share one set of resources; DUP rewrites the Info.plists, so it has its own.
    expect(warmed).toHaveLength(2);
    const identity = { p12: pki.p12, password: pki.password };
    await sign({
      input: fixtureIpa,
      output: path.join(dir, 'normal.ipa'),
      identity,
      profile: pki.profile(),
      cacheDir,
    });
    await sign({
      input: fixtureIpa,
      output: path.join(dir, 'dup.ipa'),
      identity,
      profile: pki.profile(),
      cacheDir,
      mode: 4,
      bundleIdPrefix: 'com.example.dup',
    });
    // Nothing written: both signs found their digests in the cache.
    expect(cacheFiles(cacheDir)).toEqual(warmed);
    expect(await warmDigestCache(fixtureIpa, { cacheDir })).toMatchObject({ fromCache: true });
  });
});
