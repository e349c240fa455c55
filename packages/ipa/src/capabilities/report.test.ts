/**
 * The capability report over real entitlements: the Xcode-built fixture app, and an app built here
 * (clang and ld64.lld, as the toolkit's other tests build Mach-O) whose app, share extension,
 * widget, watch app and App Clip were signed with the capabilities apps claim, as the store's copy
 * would be. Against the wildcard profile this server's identities make, a real Apple profile for
 * an explicit App ID, and a development profile granting much; in every mode. What it predicts is
 * checked against what the signer then writes.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadIdentity } from '../identity.js';
import { buildXmlPlist, type PlistObject } from '../plist.js';
import { parseProfile } from '../profile.js';
import { readEmbeddedEntitlements } from '../sign/read-signature.js';
import { createMachOSigner } from '../sign-ipa/engine.js';
import { sign } from '../sign-ipa/sign.js';
import { EXECUTABLE_MODE, buildZip, type TestZipEntry } from '../test-support/build-zip.js';
import { fixtureIpa, profilesDir } from '../test-support/fixtures.js';
import { createTestPki, type TestPki } from '../test-support/pki.js';
import { missingTools } from '../test-support/system-tools.js';
import { PLAIN_MAIN_SOURCE, buildDylib, buildExecutable } from '../test-support/toolchain.js';
import { openZip, openZipFromBuffer } from '../zip/index.js';
import { capabilityOf } from './catalog.js';
import { readSignedComponents, type SignedComponent } from './components.js';
import {
  capabilityReport,
  creatableCapabilities,
  explicitAppIdProfile,
  fitsOneAppId,
  wildcardProfile,
  type CapabilityReport,
} from './report.js';

const APP = 'Payload/Chat.app';
const APP_ID = 'com.example.chat';
const STORE_TEAM = 'STORE12345';
const GROUP = `group.${APP_ID}`;

/** What the store's copy of each part was signed with: the developer's own team and capabilities. */
const storeEntitlements = (bundleId: string, extra: PlistObject): PlistObject => ({
  'application-identifier': `${STORE_TEAM}.${bundleId}`,
  'com.apple.developer.team-identifier': STORE_TEAM,
  'get-task-allow': false,
  ...extra,
});

const APP_CLAIMS: PlistObject = {
  'aps-environment': 'production',
  'com.apple.security.application-groups': [GROUP],
  'com.apple.developer.icloud-container-identifiers': [`iCloud.${APP_ID}`],
  'com.apple.developer.icloud-services': ['CloudKit'],
  'com.apple.developer.associated-domains': ['applinks:chat.example.com', 'webcredentials:chat.example.com'],
  'keychain-access-groups': [`${STORE_TEAM}.${APP_ID}`, `${STORE_TEAM}.${APP_ID}.shared`],
  'com.apple.developer.applesignin': ['Default'],
};

let dir = '';
let pki: TestPki;
let ipaPath: string;
let components: SignedComponent[];

const info = (id: string, executable: string, extra: PlistObject = {}): Buffer =>
  Buffer.from(
    buildXmlPlist({
      CFBundleIdentifier: id,
      CFBundleExecutable: executable,
      CFBundleShortVersionString: '1.0',
      CFBundleVersion: '1',
      MinimumOSVersion: '14.0',
      ...extra,
    }),
  );

/** Outside CI a machine without openssl (the test PKI) skips this file with one line. */
const skip = missingTools('openssl');

beforeAll(async () => {
  if (skip) return;
  dir = mkdtempSync(path.join(tmpdir(), 'ipa-capabilities-'));
  pki = createTestPki(dir, STORE_TEAM);
  const plain = readFileSync(buildExecutable(dir, 'plain', PLAIN_MAIN_SOURCE));
  const kit = readFileSync(
    buildDylib(dir, 'kit', 'int kit(int x) { return x + 1; }\n', '@rpath/Kit.framework/Kit'),
  );
  const signer = createMachOSigner(loadIdentity({ p12: pki.p12, password: pki.password }));
  const signed = (bundleId: string, claims: PlistObject) =>
    signer.sign(plain, {
      identifier: bundleId,
      teamId: STORE_TEAM,
      isMainExecutable: true,
      entitlements: storeEntitlements(bundleId, claims),
    }).signed;
  const entries: TestZipEntry[] = [
    { name: `${APP}/Chat`, data: signed(APP_ID, APP_CLAIMS), mode: EXECUTABLE_MODE },
    { name: `${APP}/Info.plist`, data: info(APP_ID, 'Chat', { CFBundleDisplayName: 'Chat' }) },
    {
      name: `${APP}/PlugIns/Share.appex/Share`,
      data: signed(`${APP_ID}.share`, {
        'com.apple.security.application-groups': [GROUP],
        'keychain-access-groups': [`${STORE_TEAM}.${APP_ID}.shared`],
      }),
      mode: EXECUTABLE_MODE,
    },
    {
      name: `${APP}/PlugIns/Share.appex/Info.plist`,
      data: info(`${APP_ID}.share`, 'Share', {
        NSExtension: { NSExtensionPointIdentifier: 'com.apple.share-services' },
      }),
    },
    {
      name: `${APP}/PlugIns/Widget.appex/Widget`,
      data: signed(`${APP_ID}.widget`, { 'com.apple.security.application-groups': [GROUP] }),
      mode: EXECUTABLE_MODE,
    },
    {
      name: `${APP}/PlugIns/Widget.appex/Info.plist`,
      data: info(`${APP_ID}.widget`, 'Widget', {
        NSExtension: { NSExtensionPointIdentifier: 'com.apple.widgetkit-extension' },
      }),
    },
    {
      name: `${APP}/Watch/ChatWatch.app/ChatWatch`,
      data: signed(`${APP_ID}.watchkitapp`, { 'aps-environment': 'production' }),
      mode: EXECUTABLE_MODE,
    },
    {
      name: `${APP}/Watch/ChatWatch.app/Info.plist`,
      data: info(`${APP_ID}.watchkitapp`, 'ChatWatch', { WKCompanionAppBundleIdentifier: APP_ID }),
    },
    {
      name: `${APP}/AppClips/ChatClip.app/ChatClip`,
      data: signed(`${APP_ID}.Clip`, {
        'com.apple.developer.parent-application-identifiers': [`${STORE_TEAM}.${APP_ID}`],
        'com.apple.developer.associated-domains': ['appclips:chat.example.com'],
      }),
      mode: EXECUTABLE_MODE,
    },
    { name: `${APP}/AppClips/ChatClip.app/Info.plist`, data: info(`${APP_ID}.Clip`, 'ChatClip') },
    { name: `${APP}/Frameworks/Kit.framework/Kit`, data: kit, mode: EXECUTABLE_MODE },
    {
      name: `${APP}/Frameworks/Kit.framework/Info.plist`,
      data: info('com.example.kit', 'Kit', { CFBundlePackageType: 'FMWK' }),
    },
  ];
  ipaPath = path.join(dir, 'Chat.ipa');
  writeFileSync(ipaPath, buildZip(entries));
  const archive = await openZip(ipaPath);
  try {
    components = await readSignedComponents(archive);
  } finally {
    archive.close();
  }
});
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const TEAM = 'SIDEPORT01';
const part = (report: CapabilityReport, p: string) => report.components.find((c) => c.path === p)!;
const statusOf = (report: CapabilityReport, p: string, id: string) =>
  part(report, p).capabilities.find((c) => c.id === id)?.status;

describe.skipIf(skip)('readSignedComponents', () => {
  it('finds the app, each extension, the watch app, the App Clip and the framework, with their entitlements', () => {
    expect(components.map((c) => [c.path, c.kind, c.bundleId])).toEqual([
      ['', 'app', APP_ID],
      ['AppClips/ChatClip.app', 'app-clip', `${APP_ID}.Clip`],
      ['Frameworks/Kit.framework', 'framework', 'com.example.kit'],
      ['PlugIns/Share.appex', 'app-extension', `${APP_ID}.share`],
      ['PlugIns/Widget.appex', 'app-extension', `${APP_ID}.widget`],
      ['Watch/ChatWatch.app', 'watch-app', `${APP_ID}.watchkitapp`],
    ]);
    expect(components[0]!.name).toBe('Chat');
    expect(components[0]!.entitlements).toMatchObject(APP_CLAIMS);
    expect(components.find((c) => c.kind === 'framework')!.entitlements).toBeNull();
    expect(components.find((c) => c.path === 'PlugIns/Share.appex')!.extensionPoint).toBe(
      'com.apple.share-services',
    );
  });

  it("reads the Xcode-built fixture's entitlements from its signature", async () => {
    const archive = await openZip(fixtureIpa);
    try {
      const [app] = await readSignedComponents(archive);
      expect(app!.kind).toBe('app');
      expect(app!.entitlements).toMatchObject({
        'aps-environment': 'development',
        'com.apple.developer.associated-domains': ['webcredentials:example.com'],
        'com.apple.developer.healthkit': true,
      });
    } finally {
      archive.close();
    }
  });
});

describe.skipIf(skip)("against this server's wildcard profile", () => {
  const report = () => capabilityReport({ components, profile: wildcardProfile(TEAM) });

  it('loses push, app groups, iCloud, associated domains and Sign in with Apple, each in a sentence', () => {
    const r = report();
    for (const id of ['push', 'app-groups', 'icloud', 'associated-domains', 'sign-in-with-apple'])
      expect(statusOf(r, '', id)).toBe('lost');
    const share = part(r, 'PlugIns/Share.appex').capabilities.find((c) => c.id === 'app-groups')!;
    expect(share.sentence).toBe(
      "The share extension cannot reach the app's data: app groups are not granted by this server's profiles.",
    );
    expect(part(r, '').capabilities.find((c) => c.id === 'push')!.sentence).toBe(
      'Push notifications will not arrive.',
    );
    expect(part(r, '').capabilities.find((c) => c.id === 'sign-in-with-apple')!.sentence).toBe(
      'Sign in with Apple will not work.',
    );
    expect(r.summary).toBe('Loses push notifications, app groups, iCloud and 3 more capabilities.');
  });

  it('moves the keychain groups to the team that signs (changed, not lost)', () => {
    const r = report();
    expect(statusOf(r, '', 'keychain-sharing')).toBe('changed');
    expect(part(r, '').capabilities.find((c) => c.id === 'keychain-sharing')!.sentence).toMatch(
      /belong to this server's team \(SIDEPORT01\)/,
    );
    expect(r.teamId).toBe(TEAM);
  });

  it('says what the operator could do, and what App Store Connect cannot create', () => {
    const r = report();
    const groups = part(r, '').capabilities.find((c) => c.id === 'app-groups')!;
    expect(groups.operator).toMatch(/explicit App ID with APP_GROUPS enabled/);
    expect(groups.operator).toMatch(/cannot create app group identifiers/);
    expect(part(r, '').capabilities.find((c) => c.id === 'push')!.operator).not.toMatch(/cannot create/);
  });

  it('says the watch app will not reach a watch, and signs every part', () => {
    const r = report();
    expect(r.components.every((c) => c.outcome === 'signed')).toBe(true);
    expect(part(r, 'Watch/ChatWatch.app').note).toMatch(/will not install on a watch/);
  });

  it('finds what the signer writes, part by part', async () => {
    // The test profile grants two app groups of its own, none of the app's: the report agrees with the signature.
    const profileBytes = pki.profile({ appId: `${STORE_TEAM}.*` });
    const r = capabilityReport({ components, profile: parseProfile(profileBytes) });
    const written = await signedEntitlements(profileBytes, {});
    for (const component of r.components.filter((c) => c.kind !== 'framework')) {
      const own = components.find((c) => c.path === component.path)!.entitlements!;
      for (const outcome of component.capabilities)
        expect(
          seenInSignature(outcome.id, own, written.get(component.path)!),
          `${component.path} ${outcome.id}`,
        ).toBe(outcome.status);
    }
    expect(statusOf(r, 'PlugIns/Share.appex', 'app-groups')).toBe('lost');
    // Signed by the team the store's copy had: its keychain groups stay as they were.
    expect(statusOf(r, '', 'keychain-sharing')).toBe('kept');
  });
});

describe.skipIf(skip)('against a real Apple profile for an explicit App ID', () => {
  it('cannot sign the extensions, watch app and App Clip, whose ids the profile does not name', () => {
    const profile = parseProfile(
      readFileSync(
        path.join(profilesDir, 'fastlane_appstore_tools.fastlane.app_apple_signed.mobileprovision'),
      ),
    );
    const r = capabilityReport({ components, profile });
    expect(profile.applicationIdentifier).toBe('439BBM9367.tools.fastlane.app');
    const unsignable = r.components.filter((c) => c.outcome === 'unsignable').map((c) => c.path);
    expect(unsignable).toEqual([
      '',
      'AppClips/ChatClip.app',
      'PlugIns/Share.appex',
      'PlugIns/Widget.appex',
      'Watch/ChatWatch.app',
    ]);
    expect(part(r, 'PlugIns/Share.appex').note).toBe(
      'The share extension cannot be signed: the profile is for 439BBM9367.tools.fastlane.app only, so iOS refuses to install the app.',
    );
    expect(r.summary).toMatch(/^5 parts of it cannot be signed\./);
  });

  it('keeps what a development profile grants the Xcode-built fixture', async () => {
    const profile = parseProfile(
      readFileSync(
        path.join(
          profilesDir,
          'fastlane_very-capable-app_development_with_ProvisionedDevices_selfsigned.mobileprovision',
        ),
      ),
    );
    const archive = await openZip(fixtureIpa);
    const fixture = await readSignedComponents(archive).finally(() => archive.close());
    const r = capabilityReport({ components: fixture, profile });
    expect(r.components[0]!.outcome).toBe('signed');
    expect(statusOf(r, '', 'healthkit')).toBe('kept');
    expect(statusOf(r, '', 'network-extensions')).toBe('kept');
    const wildcard = capabilityReport({ components: fixture, profile: wildcardProfile(TEAM) });
    expect(statusOf(wildcard, '', 'healthkit')).toBe('lost');
    expect(statusOf(wildcard, '', 'push')).toBe('lost');
  });
});

describe.skipIf(skip)('in every mode', () => {
  it('modes 0 to 3 keep the ids; DUP (4) signs the copy under its own id and renames its app groups', async () => {
    const kept = capabilityReport({ components, profile: wildcardProfile(TEAM) });
    expect(kept.signedAs).toBe(APP_ID);
    const newAppId = `${APP_ID}.dupabc`;
    const profileBytes = pki.profile({ appId: `${STORE_TEAM}.*` });
    const profile = parseProfile(profileBytes);
    const copy = capabilityReport({ components, profile, newAppId });
    expect(copy.signedAs).toBe(newAppId);
    expect(part(copy, 'PlugIns/Share.appex').signedAs).toBe(`${newAppId}.share`);
    expect(part(copy, 'Frameworks/Kit.framework').signedAs).toBe('com.example.kit');
    // The copy's renamed group is not one the profile grants: lost, as the signature shows.
    const written = await signedEntitlements(profileBytes, { mode: 4, bundleIdPrefix: newAppId });
    expect(written.get('PlugIns/Share.appex')!['application-identifier']).toBe(
      `${STORE_TEAM}.${newAppId}.share`,
    );
    expect('com.apple.security.application-groups' in written.get('')!).toBe(
      statusOf(copy, '', 'app-groups') !== 'lost',
    );
  });

  it('renames app groups the profile grants under DUP: changed, with its sentence', () => {
    const newAppId = `${APP_ID}.dupabc`;
    const profile = {
      ...wildcardProfile(TEAM),
      entitlements: {
        ...wildcardProfile(TEAM).entitlements,
        'com.apple.security.application-groups': [`group.${newAppId}`],
      },
    };
    const copy = capabilityReport({ components, profile, newAppId });
    const groups = part(copy, '').capabilities.find((c) => c.id === 'app-groups')!;
    expect(groups.status).toBe('changed');
    expect(groups.sentence).toMatch(/does not share data with the original app/);
  });
});

describe.skipIf(skip)("a DUP copy's explicit App ID made through App Store Connect", () => {
  it('enables what the API can, keeps it for the app alone, and still loses app groups and iCloud', () => {
    const app = components.filter((c) => c.path === '');
    expect(fitsOneAppId(components)).toBe(false);
    expect(fitsOneAppId(app)).toBe(true);
    expect(creatableCapabilities(app)).toEqual(['APPLE_ID_AUTH', 'ASSOCIATED_DOMAINS', 'PUSH_NOTIFICATIONS']);
    const newAppId = `${APP_ID}.dupabc`;
    const profile = explicitAppIdProfile(TEAM, newAppId, creatableCapabilities(app));
    expect(profile.applicationIdentifier).toBe(`${TEAM}.${newAppId}`);
    const copy = capabilityReport({ components: app, profile, newAppId });
    for (const id of ['push', 'associated-domains', 'sign-in-with-apple'])
      expect(statusOf(copy, '', id), id).toBe('kept');
    for (const id of ['app-groups', 'icloud']) expect(statusOf(copy, '', id), id).toBe('lost');
    expect(part(copy, '').outcome).toBe('signed');
    expect(part(copy, '').capabilities.find((c) => c.id === 'icloud')!.operator).toMatch(
      /cannot create iCloud container identifiers/,
    );
    expect(copy.summary).toBe('Loses app groups and iCloud.');
  });
});

const EXECUTABLES: Record<string, string> = {
  '': 'Chat',
  'PlugIns/Share.appex': 'Share',
  'PlugIns/Widget.appex': 'Widget',
  'Watch/ChatWatch.app': 'ChatWatch',
  'AppClips/ChatClip.app': 'ChatClip',
};

/** Signs the test app and reads back the entitlements each part's executable carries. */
async function signedEntitlements(
  profile: Buffer,
  options: { mode?: 4; bundleIdPrefix?: string },
): Promise<Map<string, PlistObject>> {
  const output = path.join(dir, `signed-${options.mode ?? 0}-${Date.now()}.ipa`);
  await sign({
    input: ipaPath,
    output,
    identity: { p12: pki.p12, password: pki.password },
    profile,
    ...options,
  });
  const archive = await openZipFromBuffer(readFileSync(output));
  try {
    const out = new Map<string, PlistObject>();
    for (const [folder, executable] of Object.entries(EXECUTABLES)) {
      const name = `${APP}/${folder === '' ? '' : `${folder}/`}${executable}`;
      out.set(folder, readEmbeddedEntitlements(await archive.readEntry(archive.find(name)!), name) ?? {});
    }
    return out;
  } finally {
    archive.close();
  }
}

/** What the signature shows of a capability the part claimed: every key gone or cut short, all as claimed, or other values. */
function seenInSignature(id: string, own: Record<string, unknown>, written: PlistObject): string {
  const keys = Object.keys(own).filter((key) => capabilityOf(key).id === id);
  const lost = keys.some((key) => {
    const out = written[key];
    return (
      out === undefined ||
      (Array.isArray(out) && Array.isArray(own[key]) && out.length < (own[key] as []).length)
    );
  });
  if (lost) return 'lost';
  return keys.every((key) => JSON.stringify(own[key]) === JSON.stringify(written[key])) ? 'kept' : 'changed';
}
