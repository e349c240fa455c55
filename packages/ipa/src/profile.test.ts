import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import forge from 'node-forge';
import { describe, expect, it } from 'vitest';
import { IpaError } from './errors.js';
import { parsePlistDict } from './plist.js';
import { assertProfileUsable, parseProfile } from './profile.js';
import { profilesDir } from './test-support/fixtures.js';
import { missingTools } from './test-support/system-tools.js';

/** Outside CI a machine without these skips this file with one line saying so. */
const skip = missingTools('openssl');

const signedProfiles = {
  appStore: 'fastlane_appstore_tools.fastlane.app_apple_signed.mobileprovision',
  watch: 'fastlane_AppStore_net.sunapps.9.watch_apple_signed.mobileprovision',
  development: 'fastlane_very-capable-app_development_with_ProvisionedDevices_selfsigned.mobileprovision',
};
const plainProfile = 'fastlane_downloaded_profile_unsigned_plain_xml.mobileprovision';

const read = (name: string): Buffer => readFileSync(join(profilesDir, name));

/** The signed content as OpenSSL sees it, so the expectation does not depend on node-forge. */
function contentByOpenssl(name: string): Buffer {
  return execFileSync(
    'openssl',
    ['smime', '-inform', 'der', '-verify', '-noverify', '-in', join(profilesDir, name)],
    {
      stdio: ['ignore', 'pipe', 'ignore'],
    },
  );
}

describe.skipIf(skip)('parseProfile', () => {
  it.each(Object.values(signedProfiles))('reads what OpenSSL reads from %s', (name) => {
    const expected = parsePlistDict(contentByOpenssl(name));
    const profile = parseProfile(read(name));
    expect(profile.isSigned).toBe(true);
    expect(profile.name).toBe(expected['Name']);
    expect(profile.uuid).toBe(expected['UUID']);
    expect(profile.teamId).toBe((expected['TeamIdentifier'] as string[])[0]);
    expect(profile.teamName).toBe(expected['TeamName']);
    expect(profile.appIdName).toBe(expected['AppIDName']);
    expect(profile.entitlements).toEqual(expected['Entitlements']);
    expect(profile.provisionedDevices).toEqual(expected['ProvisionedDevices'] ?? []);
    expect(profile.creationDate).toEqual(expected['CreationDate']);
    expect(profile.expirationDate).toEqual(expected['ExpirationDate']);
    const certs = expected['DeveloperCertificates'] as Uint8Array[];
    expect(profile.developerCertificates.map((c) => c.der)).toEqual(certs.map((c) => Buffer.from(c)));
  });

  it('reads the development profile: team, device, entitlements, expiry', () => {
    const profile = parseProfile(read(signedProfiles.development));
    expect(profile).toMatchObject({
      name: 'org.fastlane.very-capable-app Development',
      uuid: '12345678-1234-1234-1234-123456789012',
      teamId: 'TestFixture',
      teamName: 'TestFixture',
      appIdName: 'very-capable-app',
      applicationIdentifier: 'TestFixture.org.fastlane.very-capable-app',
      provisionedDevices: ['1234567890123456789012345678901234567890'],
      provisionsAllDevices: false,
      platforms: ['iOS'],
    });
    expect(profile.entitlements['aps-environment']).toBe('development');
    expect(profile.entitlements['get-task-allow']).toBe(true);
    expect(profile.creationDate.toISOString()).toBe('2018-04-07T01:27:21.000Z');
    expect(profile.expirationDate.toISOString()).toBe('2019-04-07T01:27:21.000Z');
    expect(profile.isExpired(new Date('2019-04-07T01:27:20Z'))).toBe(false);
    expect(profile.isExpired(new Date('2019-04-07T01:27:21Z'))).toBe(true);
    expect(profile.developerCertificates).toHaveLength(1);
    expect(profile.developerCertificates[0]!.certificate).toBeDefined();
  });

  it('reads an Apple-signed App Store profile without devices', () => {
    const profile = parseProfile(read(signedProfiles.appStore));
    expect(profile).toMatchObject({
      name: 'tools.fastlane.app AppStore',
      teamId: '439BBM9367',
      teamName: 'Felix Krause',
      applicationIdentifier: '439BBM9367.tools.fastlane.app',
      provisionedDevices: [],
    });
    expect(profile.expirationDate.toISOString()).toBe('2016-11-07T20:58:52.000Z');
  });

  it('reads a plain XML profile, keeping an unreadable certificate as bytes', () => {
    const profile = parseProfile(read(plainProfile));
    expect(profile).toMatchObject({
      isSigned: false,
      name: 'App Name',
      teamId: '5A997XSHK2',
      teamName: 'SunApps GmbH',
      applicationIdentifier: '5A997XSHK2.net.sunapps.9',
      provisionedDevices: [],
    });
    expect(profile.expirationDate.toISOString()).toBe('2016-02-10T23:44:20.000Z');
    expect(profile.developerCertificates).toHaveLength(1);
    expect(profile.developerCertificates[0]!.certificate).toBeUndefined();
  });

  it('refuses bytes that are no profile: PROFILE_INVALID', () => {
    expect(() => parseProfile(Buffer.from([0x30, 0x03, 0x02, 0x01]))).toThrow(IpaError);
    expect(() => parseProfile(Buffer.from('not a profile'))).toThrow(
      /^Expected a provisioning profile \(CMS SignedData or plist\), found bytes 0x6e6f7420 that do not parse/,
    );
  });

  it('refuses a plist missing the entitlements: PROFILE_INVALID', () => {
    const xml = '<plist><dict><key>Name</key><string>x</string></dict></plist>';
    expect(() => parseProfile(Buffer.from(xml))).toThrow(
      new IpaError(
        'PROFILE_INVALID',
        'Expected the provisioning profile to have Entitlements as a dictionary, found none.',
      ),
    );
  });

  it('gives IpaError, never a crash, on random or damaged bytes', () => {
    const original = read(signedProfiles.appStore);
    const damaged = fc
      .tuple(fc.nat(original.length - 1), fc.integer({ min: 0, max: 255 }))
      .map(([at, value]) => {
        const copy = Buffer.from(original);
        copy[at] = value;
        return copy;
      });
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
          damaged,
        ),
        (bytes) => {
          try {
            parseProfile(bytes);
          } catch (err) {
            expect(err).toBeInstanceOf(IpaError);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe.skipIf(skip)('assertProfileUsable', () => {
  const profile = parseProfile(read(signedProfiles.development));
  const listed = profile.developerCertificates[0]!.certificate!;

  it('accepts a listed certificate before expiry', () => {
    expect(() => assertProfileUsable(profile, listed, new Date('2018-06-01T00:00:00Z'))).not.toThrow();
  });

  it('refuses an expired profile: PROFILE_EXPIRED', () => {
    expect(() => assertProfileUsable(profile, listed, new Date('2020-01-01T00:00:00Z'))).toThrow(
      new IpaError(
        'PROFILE_EXPIRED',
        'Expected a provisioning profile valid on 2020-01-01T00:00:00.000Z, found "org.fastlane.very-capable-app Development" which expired on 2019-04-07T01:27:21.000Z.',
      ),
    );
  });

  it('refuses a certificate the profile does not list: CERTIFICATE_NOT_IN_PROFILE', () => {
    const other = parseProfile(read(signedProfiles.appStore)).developerCertificates[0]!.certificate!;
    let error: unknown;
    try {
      assertProfileUsable(profile, other, new Date('2018-06-01T00:00:00Z'));
    } catch (err) {
      error = err;
    }
    expect((error as IpaError).code).toBe('CERTIFICATE_NOT_IN_PROFILE');
    const cn = other.subject.getField('CN').value as string;
    expect((error as IpaError).message).toBe(
      `Expected the signing certificate "${cn}" to be one of the 1 developer certificates in "org.fastlane.very-capable-app Development", found it is not: sign with a certificate the profile lists or regenerate the profile.`,
    );
    expect(forge.pki.certificateToPem(other)).toContain('BEGIN CERTIFICATE');
  });
});
