import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseProfile } from '../profile.js';
import { entitlementsFor } from './entitlements.js';

const profileDir = path.resolve(import.meta.dirname, '../../../../../shared/fixtures/mobileprovision');
const load = (name: string) => parseProfile(readFileSync(path.join(profileDir, name)));

describe('entitlementsFor', () => {
  it('makes a real profile\'s wildcards concrete for the bundle id and names the team', () => {
    const profile = load('fastlane_very-capable-app_development_with_ProvisionedDevices_selfsigned.mobileprovision');
    const ents = entitlementsFor(profile, 'com.example.copy');
    expect(ents['application-identifier']).toBe(`${profile.teamId}.com.example.copy`);
    expect(ents['com.apple.developer.team-identifier']).toBe(profile.teamId);
    for (const group of (ents['keychain-access-groups'] as string[] | undefined) ?? []) {
      expect(group.endsWith('.*')).toBe(false);
    }
    // Nothing is claimed that the profile does not grant.
    for (const key of Object.keys(ents)) {
      expect([...Object.keys(profile.entitlements), 'application-identifier', 'com.apple.developer.team-identifier']).toContain(key);
    }
  });

  it('drops bare wildcards and rewrites TEAM.* values', () => {
    const ents = entitlementsFor(
      {
        teamId: 'ABCDE12345',
        entitlements: {
          'application-identifier': 'ABCDE12345.*',
          'keychain-access-groups': ['ABCDE12345.*', 'ABCDE12345.shared'],
          'com.apple.developer.associated-domains': '*',
          'get-task-allow': false,
        },
      },
      'com.example.app',
    );
    expect(ents).toEqual({
      'application-identifier': 'ABCDE12345.com.example.app',
      'keychain-access-groups': ['ABCDE12345.com.example.app', 'ABCDE12345.shared'],
      'get-task-allow': false,
      'com.apple.developer.team-identifier': 'ABCDE12345',
    });
  });
});
