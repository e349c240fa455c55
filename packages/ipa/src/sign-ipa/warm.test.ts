import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fixtureIpa } from '../test-support/fixtures.js';
import { createTestPki } from '../test-support/pki.js';
import { sign } from './sign.js';
import { warmDigestCache } from './warm.js';

const dir = mkdtempSync(path.join(tmpdir(), 'ipa-warm-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const pki = createTestPki(dir);

const cacheFiles = (cacheDir: string) =>
  readdirSync(path.join(cacheDir, 'resource-digests'))
    .sort()
    .map((name) => `${name} ${statSync(path.join(cacheDir, 'resource-digests', name)).mtimeMs}`);

describe('warmDigestCache', () => {
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
