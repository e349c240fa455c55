import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBinaryPlist, buildXmlPlist, parsePlistDict } from './plist.js';
import { readStoreMetadata } from './store-metadata.js';
import { buildZip, type TestZipEntry } from './test-support/build-zip.js';
import { fixtureExecutablePath, fixtureIpa } from './test-support/fixtures.js';
import { withCryptid } from './test-support/macho-bytes.js';
import { readFixtureEntries } from './test-support/read-fixture.js';
import { verifyDecrypted } from './verify.js';

const infoPath = 'Payload/very-capable-app.app/Info.plist';
let dir: string;
let entries: TestZipEntry[];
let count = 0;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ipa-verify-'));
  entries = await readFixtureEntries();
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** The fixture IPA with entries replaced or added. */
async function variant(changes: Record<string, Buffer | string>): Promise<string> {
  const replaced = entries.map((e) => (e.name in changes ? { ...e, data: changes[e.name]! } : e));
  for (const [name, data] of Object.entries(changes))
    if (!replaced.some((e) => e.name === name)) replaced.push({ name, data });
  const file = join(dir, `variant-${++count}.ipa`);
  await writeFile(file, buildZip(replaced));
  return file;
}
const entry = (name: string) => entries.find((e) => e.name === name)!.data as Buffer;

describe('verifyDecrypted', () => {
  it('accepts the decrypted fixture app and reads its version', async () => {
    const verdict = await verifyDecrypted(fixtureIpa, { bundleId: 'org.fastlane.very-capable-app' });
    expect(verdict).toMatchObject({
      ok: true,
      version: '1.0',
      report: { minimumOsVersion: '11.2', decrypted: true },
    });
  });

  it('refuses an encrypted executable, naming it', async () => {
    const file = await variant({ [fixtureExecutablePath]: withCryptid(entry(fixtureExecutablePath), 1) });
    expect(await verifyDecrypted(file)).toEqual({
      ok: false,
      reason: `The IPA is still encrypted (cryptid is not 0 in ${fixtureExecutablePath}).`,
    });
  });

  it('refuses another app than the one expected', async () => {
    expect(await verifyDecrypted(fixtureIpa, { bundleId: 'com.example.other' })).toEqual({
      ok: false,
      reason: 'The IPA is org.fastlane.very-capable-app, not the requested com.example.other.',
    });
  });

  it('refuses another version than the one expected, saying whether the job or the agent expected it', async () => {
    expect(
      await verifyDecrypted(fixtureIpa, { bundleId: 'org.fastlane.very-capable-app', version: '0.9' }),
    ).toEqual({
      ok: false,
      reason: 'The IPA is version 1.0 (CFBundleShortVersionString in its Info.plist), not the requested 0.9.',
    });
    expect(await verifyDecrypted(fixtureIpa, { version: '5.5.5', versionSource: 'reported' })).toEqual({
      ok: false,
      reason:
        'The IPA is version 1.0 (CFBundleShortVersionString in its Info.plist), not the reported 5.5.5.',
    });
    expect(await verifyDecrypted(fixtureIpa, { version: '1.0' })).toMatchObject({ ok: true, version: '1.0' });
  });

  it('refuses an IPA whose iTunesMetadata.plist names another store version, app or bundle id', async () => {
    const file = await variant({
      'iTunesMetadata.plist': buildXmlPlist({
        softwareVersionExternalIdentifier: 853372310,
        softwareVersionBundleId: 'org.fastlane.very-capable-app',
        itemId: 284882215,
      }),
    });
    expect(await verifyDecrypted(file, { appVerId: '853372311' })).toEqual({
      ok: false,
      reason:
        "The IPA's iTunesMetadata.plist names store version 853372310 (softwareVersionExternalIdentifier), not the requested 853372311.",
    });
    expect(await verifyDecrypted(file, { appVerId: '1', versionSource: 'reported' })).toMatchObject({
      reason: expect.stringMatching(/, not the reported 1\.$/),
    });
    expect(await verifyDecrypted(file, { appId: '1' })).toEqual({
      ok: false,
      reason: "The IPA's iTunesMetadata.plist names store app 284882215 (itemId), not the requested 1.",
    });
    const relabelled = await variant({
      'iTunesMetadata.plist': buildXmlPlist({ softwareVersionBundleId: 'com.example.other' }),
    });
    expect(await verifyDecrypted(relabelled, { bundleId: 'org.fastlane.very-capable-app' })).toEqual({
      ok: false,
      reason:
        "The IPA's iTunesMetadata.plist names the app com.example.other (softwareVersionBundleId), not the requested org.fastlane.very-capable-app.",
    });
    expect(
      await verifyDecrypted(file, {
        bundleId: 'org.fastlane.very-capable-app',
        appId: '284882215',
        appVerId: '853372310',
        version: '1.0',
      }),
    ).toMatchObject({ ok: true, metadata: { appVerId: '853372310', appId: '284882215' } });
  });

  it('does not refuse an IPA without iTunesMetadata.plist for the store ids it cannot name', async () => {
    expect(await verifyDecrypted(fixtureIpa, { appId: '1', appVerId: '2' })).toMatchObject({
      ok: true,
      metadata: undefined,
    });
  });

  it('refuses an app whose Info.plist names no version', async () => {
    const info = parsePlistDict(entry(infoPath));
    delete info.CFBundleShortVersionString;
    delete info.CFBundleVersion;
    const file = await variant({ [infoPath]: buildBinaryPlist(info) });
    expect(await verifyDecrypted(file)).toEqual({
      ok: false,
      reason: 'The IPA names no version in its Info.plist.',
    });
  });

  it('refuses a damaged archive with the reading error as the reason', async () => {
    const file = join(dir, 'truncated.ipa');
    await writeFile(file, buildZip(entries).subarray(0, 4000));
    const verdict = await verifyDecrypted(file);
    expect(verdict.ok).toBe(false);
    expect(verdict.ok === false && verdict.reason).toMatch(/^The IPA is not usable: /);
  });
});

describe('readStoreMetadata', () => {
  it("reads the store's version id, version, bundle id and app id, stored as numbers or as text", async () => {
    const file = await variant({
      'iTunesMetadata.plist': buildXmlPlist({
        softwareVersionExternalIdentifier: 853372310,
        bundleShortVersionString: '2.3',
        softwareVersionBundleId: 'org.fastlane.very-capable-app',
        itemId: '284882215',
      }),
    });
    expect(await readStoreMetadata(file)).toEqual({
      appVerId: '853372310',
      version: '2.3',
      bundleId: 'org.fastlane.very-capable-app',
      appId: '284882215',
    });
  });

  it('is undefined for an IPA without the file, and leaves out fields of another type', async () => {
    expect(await readStoreMetadata(fixtureIpa)).toBeUndefined();
    const file = await variant({
      'iTunesMetadata.plist': buildBinaryPlist({ softwareVersionExternalIdentifier: -4, itemId: 'x' }),
    });
    expect(await readStoreMetadata(file)).toEqual({});
  });
});
