import { describe, expect, it } from 'vitest';
import { createGroupRemap, mergeEntitlements } from './entitlements.js';

const profile = {
  teamId: 'NEWTEAM123',
  entitlements: {
    'application-identifier': 'NEWTEAM123.*',
    'com.apple.developer.team-identifier': 'NEWTEAM123',
    'get-task-allow': true,
    'keychain-access-groups': ['NEWTEAM123.*'],
    'com.apple.security.application-groups': ['group.io.new', 'group.com.old.app'],
    'com.apple.developer.associated-domains': '*',
    'aps-environment': 'development',
  },
};

describe('mergeEntitlements', () => {
  it('writes the profile team and the bundle id, dropping wildcard-only grants', () => {
    const merged = mergeEntitlements({ profile, bundleId: 'com.old.app' });
    expect(merged['application-identifier']).toBe('NEWTEAM123.com.old.app');
    expect(merged['com.apple.developer.team-identifier']).toBe('NEWTEAM123');
    expect(merged['keychain-access-groups']).toEqual(['NEWTEAM123.com.old.app']);
    expect(merged['get-task-allow']).toBe(true);
    expect(merged['aps-environment']).toBe('development');
    expect(merged).not.toHaveProperty('com.apple.developer.associated-domains');
  });

  it("moves the app's own keychain groups to the new team", () => {
    const merged = mergeEntitlements({
      profile,
      bundleId: 'com.old.app',
      own: { 'keychain-access-groups': ['OLDTEAM999.com.old.app', 'OLDTEAM999.com.old.shared'] },
    });
    expect(merged['keychain-access-groups']).toEqual(['NEWTEAM123.com.old.app', 'NEWTEAM123.com.old.shared']);
  });

  it('keeps only the app groups the profile grants', () => {
    const merged = mergeEntitlements({
      profile,
      bundleId: 'com.old.app',
      own: { 'com.apple.security.application-groups': ['group.com.old.app', 'group.not.granted'] },
    });
    expect(merged['com.apple.security.application-groups']).toEqual(['group.com.old.app']);
  });

  it('remaps app groups and keychain groups for DUP, leaving nothing of the old identifier', () => {
    const merged = mergeEntitlements({
      profile,
      bundleId: 'io.new',
      own: {
        'com.apple.security.application-groups': ['group.com.old.app'],
        'keychain-access-groups': ['OLDTEAM999.com.old.app'],
      },
      remapGroup: createGroupRemap('com.old.app', 'io.new'),
      remapId: (id) => (id === 'com.old.app' ? 'io.new' : id),
    });
    expect(merged['com.apple.security.application-groups']).toEqual(['group.io.new']);
    expect(merged['keychain-access-groups']).toEqual(['NEWTEAM123.io.new']);
    expect(JSON.stringify(merged)).not.toContain('com.old.app"');
  });
});

describe('mergeEntitlements with wildcard grants', () => {
  it("keeps the app's own list values that a wildcard grant allows, and none it does not grant", () => {
    const merged = mergeEntitlements({
      profile,
      bundleId: 'com.old.app',
      own: {
        'com.apple.developer.associated-domains': ['webcredentials:example.com', 'applinks:example.com'],
        'com.apple.developer.homekit': true,
      },
    });
    expect(merged['com.apple.developer.associated-domains']).toEqual([
      'webcredentials:example.com',
      'applinks:example.com',
    ]);
    expect(merged).not.toHaveProperty('com.apple.developer.homekit');
  });
});

describe('createGroupRemap', () => {
  it('renames groups consistently, so app and extensions still share them', () => {
    const remap = createGroupRemap('com.old.app', 'io.new');
    expect(remap('group.com.old.app')).toBe('group.io.new');
    expect(remap('group.com.old.app.shared')).toBe('group.io.new.shared');
    expect(remap('group.other')).toBe('group.io.new.other');
  });
});
