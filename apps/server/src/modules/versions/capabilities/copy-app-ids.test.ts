/**
 * A DUP copy keeps what App Store Connect can grant (issue 30): with the operator's setting on, a
 * DUP sign makes, through the local App Store Connect (every request held to Apple's OpenAPI
 * document), an explicit App ID for the copy's bundle id with the capabilities the app claims that
 * the API can enable, and the profile for it; the copy is signed with it, the version's report
 * says those are kept, and still names what the API cannot create (app groups, iCloud containers).
 */
import { generateKeyPairSync } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AdminCopyAppIds, AppEntry, SignEvent } from '@sideport/contracts';
import {
  creatableCapabilities,
  explicitAppIdProfile,
  openZip,
  parseProfile,
  readSignedComponents,
} from '@sideport/ipa';
import { missingTools } from '@sideport/ipa/test-support/system-tools';
import type { ItunesServer } from '../../../dev/itunes-server.js';
import * as schema from '../../../db/schema/index.js';
import { startAscServer, type AscServer } from '../../../test/asc-server.js';
import { buildIpa, storeApp, storeWith } from '../../../test/decrypt-support.js';
import {
  createTestApp,
  databaseKinds,
  signedInUser,
  WEB_CLIENT,
  type TestApp,
} from '../../../test/harness.js';
import * as devices from '../../devices/queries.js';
import { createAscClient } from '../../identity/asc-client.js';
import { dupSuffix } from '../../sign/worker.js';

/** Outside CI a machine without openssl (the signing process's checks) skips this file with one line. */
const skip = missingTools('openssl');

const KEY_ID = 'KEYCOPY001';
const ISSUER_ID = '69a6de70-0000-47e3-e053-5b8c7c11a4e7';
const keyPem = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
  .privateKey.export({ type: 'pkcs8', format: 'pem' })
  .toString();
const APP_ID = 6400;
const APP_VER_ID = 864000001;
const BUNDLE_ID = 'com.example.keepscopy';
const SETTING = '/api/admin/capabilities/copy-app-ids';

describe.skipIf(skip).each(databaseKinds)("a DUP copy's explicit App ID on %s", (kind) => {
  let asc: AscServer;
  let store: ItunesServer;
  let t: TestApp;
  let user: string;
  let cookie: string;
  let admin: string;
  const events: SignEvent[] = [];

  const as = (who: string) => ({ cookie: who, ...WEB_CLIENT });
  const dupReport = async () => {
    const res = await t.app.inject({ url: `/api/version/KR/${APP_ID}`, headers: as(cookie) });
    expect(res.statusCode, res.body).toBe(200);
    const [entry] = res.json() as AppEntry[];
    return entry!.capabilities!.modes.find((m) => m.sign_types.includes(4))!;
  };
  const statusIn = (mode: Awaited<ReturnType<typeof dupReport>>, id: string) =>
    mode.components[0]!.capabilities.find((c) => c.id === id);

  beforeAll(async () => {
    asc = await startAscServer({ keyId: KEY_ID, issuerId: ISSUER_ID, keyPem });
    store = await storeWith([storeApp(APP_ID, BUNDLE_ID)]);
    t = await createTestApp(kind, {
      env: {
        ASC_KEY_ID: KEY_ID,
        ASC_ISSUER_ID: ISSUER_ID,
        ASC_PRIVATE_KEY: keyPem,
        ASC_BASE_URL: asc.url,
        ITUNES_BASE_URL: store.url,
        REGISTRATION_INTERVAL_SECONDS: '0',
        SIGN_IN_LIMIT_PER_ADDRESS: '10000',
      },
    });
    t.services.bus.subscribe((m) => {
      if (m.kind === 'live' && m.event.type === 'sign') events.push(m.event);
    });
    // The Xcode-built fixture: push, associated domains, HealthKit, app groups, iCloud ...
    const ipa = await buildIpa({ bundleId: BUNDLE_ID, version: '1.0', appVerId: String(APP_VER_ID) });
    await t.services.jobs.importIpa(ipa, { country: 'KR', appId: APP_ID });
    await t.services.components.settle();
    user = `copy_${kind}`;
    cookie = await signedInUser(t, user);
    admin = await signedInUser(t, `copy_admin_${kind}`, 1);
    await devices.insertDevice(t.database.db, {
      userId: user,
      product: 'iPhone15,2',
      udid: '00008120-0011223344556601',
      status: 'Registered',
    });
  });
  afterAll(async () => {
    await t?.close();
    await asc?.close();
    await store?.close();
  });

  it('is an admin setting, off until turned on, that says what the API cannot create', async () => {
    const refused = await t.app.inject({ url: SETTING, headers: as(cookie) });
    expect(refused.statusCode).toBe(403);
    const res = await t.app.inject({ url: SETTING, headers: as(admin) });
    expect(res.statusCode, res.body).toBe(200);
    const setting = res.json() as AdminCopyAppIds;
    expect(setting).toMatchObject({ enabled: false, available: true });
    expect(setting.cannot_create).toContain('App groups: app group identifiers (group.…)');
    expect(setting.cannot_create).toContain('iCloud: iCloud container identifiers (iCloud.…)');
    const bad = await t.app.inject({
      method: 'PUT',
      url: SETTING,
      payload: { enabled: 'yes' },
      headers: as(admin),
    });
    expect(bad.statusCode).toBe(400);
    expect((await t.app.inject({ url: SETTING, headers: as(admin) })).json()).toMatchObject({
      enabled: false,
    });
    // Off: the copy is signed for the wildcard App ID and loses what only an explicit one has.
    expect(statusIn(await dupReport(), 'associated-domains')?.status).toBe('lost');
  });

  it('makes the explicit App ID with its capabilities and its profile, signs the copy with it, and reports them kept', async () => {
    const turned = await t.app.inject({
      method: 'PUT',
      url: SETTING,
      payload: { enabled: true },
      headers: as(admin),
    });
    expect(turned.statusCode, turned.body).toBe(200);
    expect(turned.json()).toMatchObject({ enabled: true, available: true });
    const [audit] = await t.database.db
      .select()
      .from(schema.auditLog)
      .where(eq(schema.auditLog.action, 'set-copy-app-ids'));
    expect(audit!.subject).toEqual({ enabled: true });

    // The report says so before anything is signed.
    const copy = await dupReport();
    const copyId = `${BUNDLE_ID}.${dupSuffix(user, APP_ID)}`;
    expect(copy.bundle_id).toBe(copyId);
    for (const id of ['associated-domains', 'healthkit', 'homekit', 'siri'])
      expect(statusIn(copy, id)?.status, id).toBe('kept');
    // The fixture was built for development; an ad-hoc profile grants production: changed, not lost.
    expect(statusIn(copy, 'push')?.status).toBe('changed');
    const icloud = statusIn(copy, 'icloud')!;
    expect(icloud.status).toBe('lost');
    expect(icloud.operator).toMatch(/cannot create iCloud container identifiers/);
    expect(statusIn(copy, 'app-groups')?.status).toBe('lost');

    const signed = await t.app.inject({
      method: 'PUT',
      url: `/api/sign/${APP_ID}/${APP_VER_ID}`,
      payload: { type: 4 },
      headers: as(cookie),
    });
    expect(signed.statusCode, signed.body).toBe(200);
    await expect
      .poll(() => events.find((e) => e.type === 'sign' && ['Done', 'Failed'].includes(e.status))?.status, {
        timeout: 150_000,
        interval: 50,
      })
      .toBe('Done');

    // On the account: the copy's explicit App ID, Apple's defaults and the capabilities the app claims.
    const appId = asc.bundleIds.find((b) => b.identifier === copyId)!;
    expect(appId).toBeDefined();
    const components = (await t.database.db.select().from(schema.versionComponents))[0]!.components;
    const wanted = creatableCapabilities(components);
    expect(wanted).toEqual(expect.arrayContaining(['ASSOCIATED_DOMAINS', 'PUSH_NOTIFICATIONS', 'HEALTHKIT']));
    expect(wanted).not.toContain('APP_GROUPS');
    expect(wanted).not.toContain('ICLOUD');
    expect(appId.capabilities.map((c) => c.capabilityType).sort()).toEqual(
      [...new Set(['GAME_CENTER', 'IN_APP_PURCHASE', ...wanted])].sort(),
    );
    expect(appId.capabilities.every((c) => c.id === `${appId.id}_${c.capabilityType}`)).toBe(true);
    expect(asc.violations).toEqual([]);
    const profile = asc.profiles.find((p) => p.bundleIdId === appId.id)!;
    expect(profile.profileType).toBe('IOS_APP_ADHOC');

    // The copy carries that profile, and its signature the capabilities the report said it keeps.
    const [row] = await t.database.db
      .select()
      .from(schema.signRequests)
      .where(and(eq(schema.signRequests.userId, user), eq(schema.signRequests.signType, 4)));
    const archive = await openZip(t.services.files.localPath(row!.fileKey!)!);
    try {
      const entry = archive.entries.find((e) =>
        /^Payload\/[^/]+\.app\/embedded\.mobileprovision$/.test(e.name),
      )!;
      const embedded = parseProfile(await archive.readEntry(entry));
      expect(embedded.uuid).toBe(profile.uuid);
      expect(embedded.applicationIdentifier).toBe(`${asc.teamId}.${copyId}`);
      // The report's model of Apple's explicit profile is the double's profile, key for key.
      expect(embedded.entitlements).toEqual(explicitAppIdProfile(asc.teamId, copyId, wanted).entitlements);
      const [app] = await readSignedComponents(archive);
      expect(app!.bundleId).toBe(copyId);
      expect(app!.entitlements).toMatchObject({
        'aps-environment': 'production',
        'com.apple.developer.associated-domains': expect.any(Array) as unknown,
        'com.apple.developer.healthkit': true,
      });
      expect(app!.entitlements!['com.apple.security.application-groups']).toBeUndefined();
    } finally {
      archive.close();
    }
    // Kept per user and copy: the next sign of the copy uses the same profile, nothing asked of Apple.
    const [kept] = await t.database.db.select().from(schema.copyProfiles);
    expect(kept).toMatchObject({ userId: user, bundleId: copyId, uuid: profile.uuid });
  });

  it('finds the App ID made before, and counts a capability enabled meanwhile as enabled', async () => {
    const before = asc.bundleIds.length;
    const client = createAscClient({
      key: { keyId: KEY_ID, issuerId: ISSUER_ID, privateKeyPem: keyPem },
      baseUrl: asc.url,
    });
    const copyId = `${BUNDLE_ID}.${dupSuffix(user, APP_ID)}`;
    const id = await client.ensureBundleId({ identifier: copyId, name: 'Again' });
    expect(id).toBe(asc.bundleIds.find((b) => b.identifier === copyId)!.id);
    // A capability enabled twice is Apple's 409, which the client counts as enabled.
    expect(await client.ensureCapabilities(id, ['PUSH_NOTIFICATIONS', 'MAPS'])).toContain('MAPS');
    expect(asc.bundleIds).toHaveLength(before);
    expect(asc.violations).toEqual([]);
  });
});
