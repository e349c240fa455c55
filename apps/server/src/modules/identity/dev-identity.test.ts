import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { assertProfileUsable, loadIdentity, nameOf, openZip, parseProfile, sign } from '@sideport/ipa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureIpa } from '../../test/fixtures.js';
import { verifyCms } from '../../test/cms-verify.js';
import {
  createDevIdentity,
  createDevProfile,
  DEV_IDENTITY_LABEL,
  devIdentitySource,
  devSigningIdentity,
  type DevIdentity,
} from './dev-identity.js';

const NOW = new Date('2026-03-01T10:00:00.123Z');
const UDIDS = ['00008030-001A2B3C4D5E6F70', 'b1946ac92492d2347c6235b4d2611184a1e4ffc2'];

let dir: string;
let identity: DevIdentity;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'sideport-dev-identity-'));
  identity = createDevIdentity({ clock: () => NOW });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('dev identity', () => {
  it('says on its certificates that it is Sideport’s, not Apple’s', () => {
    const { certificate, chain } = devSigningIdentity(identity);
    expect(identity.teamId).toMatch(/^[A-Z0-9]{10}$/);
    expect(certificate.subject.getField('CN').value).toBe(
      `${DEV_IDENTITY_LABEL}: Sideport (${identity.teamId})`,
    );
    expect(certificate.subject.getField('OU').value).toBe(identity.teamId);
    expect(chain.map((c) => nameOf(c))).toEqual([`${DEV_IDENTITY_LABEL} CA`]);
    expect(certificate.validity.notBefore.getTime()).toBeLessThan(NOW.getTime());
    expect(certificate.validity.notAfter.getUTCFullYear()).toBe(2036);
  });

  it('makes a new team and keys each time', () => {
    const other = createDevIdentity({ clock: () => NOW });
    expect(other.teamId).not.toBe(identity.teamId);
    expect(other.keyPem).not.toBe(identity.keyPem);
  });

  it('makes a profile that @sideport/ipa reads as an ad-hoc wildcard profile for the devices', () => {
    const made = createDevProfile(identity, { devices: UDIDS, clock: () => NOW });
    const profile = parseProfile(made.bytes);
    expect(profile).toMatchObject({
      name: made.name,
      uuid: made.uuid,
      teamId: identity.teamId,
      teamName: DEV_IDENTITY_LABEL,
      applicationIdentifier: `${identity.teamId}.*`,
      provisionedDevices: UDIDS,
      provisionsAllDevices: false,
      platforms: ['iOS'],
      isSigned: true,
    });
    expect(made.name).toContain(DEV_IDENTITY_LABEL);
    expect(made.uuid).toMatch(/^[0-9A-F]{8}-[0-9A-F]{4}-4[0-9A-F]{3}-[89AB][0-9A-F]{3}-[0-9A-F]{12}$/);
    expect(profile.entitlements).toEqual({
      'application-identifier': `${identity.teamId}.*`,
      'keychain-access-groups': [`${identity.teamId}.*`],
      'get-task-allow': false,
      'com.apple.developer.team-identifier': identity.teamId,
    });
    expect(profile.creationDate.toISOString()).toBe('2026-03-01T10:00:00.000Z');
    expect(profile.expirationDate.toISOString()).toBe('2027-03-01T10:00:00.000Z');
    expect(made.expirationDate).toEqual(profile.expirationDate);
    // The certificate it lists is the one that signs: the signer's own check passes.
    assertProfileUsable(profile, loadIdentity(devIdentitySource(identity)).certificate, NOW);
  });

  it('signs the profile so that pkijs verifies it against the dev CA', async () => {
    const made = createDevProfile(identity, { devices: UDIDS, clock: () => NOW });
    const plist = (
      await verifyCms(made.bytes, identity.caCertPem, new Date(NOW.getTime() + 60_000))
    ).toString('utf8');
    expect(plist).toContain('<key>ProvisionedDevices</key>');
    expect(plist).toContain(UDIDS[0]);
  });

  it('caps a profile at the signing certificate’s expiry', () => {
    const shortLived = createDevIdentity({ clock: () => NOW, validYears: 1 });
    const made = createDevProfile(shortLived, {
      devices: UDIDS,
      clock: () => new Date('2026-12-01T00:00:00Z'),
    });
    expect(made.expirationDate.toISOString()).toBe('2027-03-01T10:00:00.000Z');
  });

  it('signs the fixture IPA, whose embedded profile then lists the devices', async () => {
    const made = createDevProfile(identity, { devices: UDIDS });
    const output = path.join(dir, 'signed.ipa');
    const report = await sign({
      input: fixtureIpa,
      output,
      identity: devIdentitySource(identity),
      profile: made.bytes,
      mode: 0,
    });
    expect(report.profile).toMatchObject({ name: made.name, uuid: made.uuid, teamId: identity.teamId });
    expect(report.bundles.map((b) => b.bundleId)).toContain('org.fastlane.very-capable-app');

    const archive = await openZip(output);
    try {
      const entry = archive.find('Payload/very-capable-app.app/embedded.mobileprovision');
      expect(entry).toBeDefined();
      const embedded = parseProfile(await archive.readEntry(entry!, 1 << 20));
      expect(embedded.provisionedDevices).toEqual(UDIDS);
      expect(embedded.uuid).toBe(made.uuid);
    } finally {
      await archive.close();
    }
  });
});
