import { describe, expect, it } from 'vitest';
import { createBundleIdRemap, createGroupRemap, remapInfoPlist } from './bundle-ids.js';

describe('createBundleIdRemap', () => {
  const remap = createBundleIdRemap('com.old.app', 'io.sideport.u7');

  it('moves the app and keeps nested suffixes', () => {
    expect(remap('com.old.app')).toBe('io.sideport.u7');
    expect(remap('com.old.app.share')).toBe('io.sideport.u7.share');
    expect(remap('com.old.app.watchkitapp.watchkitextension')).toBe('io.sideport.u7.watchkitapp.watchkitextension');
  });

  it('moves identifiers outside the app namespace under the new one', () => {
    expect(remap('org.cocoapods.Kit')).toBe('io.sideport.u7.Kit');
  });

  it('refuses a new identifier with characters Apple does not allow: BUNDLE_ID_INVALID', () => {
    expect(() => createBundleIdRemap('com.old.app', 'bad id!')).toThrow(expect.objectContaining({ code: 'BUNDLE_ID_INVALID' }));
  });
});

describe('remapInfoPlist', () => {
  it('rewrites the bundle id and the watch and extension references, nothing else', () => {
    const remap = createBundleIdRemap('com.old.app', 'io.new');
    const info = {
      CFBundleIdentifier: 'com.old.app.watchkitapp.ext',
      CFBundleName: 'com.old.app',
      WKCompanionAppBundleIdentifier: 'com.old.app',
      NSExtension: { NSExtensionAttributes: { WKAppBundleIdentifier: 'com.old.app.watchkitapp' }, NSExtensionPointIdentifier: 'com.apple.watchkit' },
    };
    expect(remapInfoPlist(info, remap)).toEqual({
      CFBundleIdentifier: 'io.new.watchkitapp.ext',
      CFBundleName: 'com.old.app',
      WKCompanionAppBundleIdentifier: 'io.new',
      NSExtension: { NSExtensionAttributes: { WKAppBundleIdentifier: 'io.new.watchkitapp' }, NSExtensionPointIdentifier: 'com.apple.watchkit' },
    });
  });
});

describe('createGroupRemap', () => {
  it('renames groups consistently, so app and extensions still share them', () => {
    const remap = createGroupRemap('com.old.app', 'io.new');
    expect(remap('group.com.old.app')).toBe('group.io.new');
    expect(remap('group.com.old.app.shared')).toBe('group.io.new.shared');
    expect(remap('group.other')).toBe('group.io.new.other');
    expect(remap('group.other')).toBe(remap('group.other'));
  });
});
