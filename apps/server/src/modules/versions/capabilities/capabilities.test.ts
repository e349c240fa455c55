/**
 * The capability report in GET /api/version/...: the components of a version are read when it
 * becomes Done (or, for one Done before, when first looked at), and each Done entry says what
 * signing keeps of them for the viewer, with the team that would sign and DUP's own report.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import type { AdminCapabilityEntry, AppEntry } from '@sideport/contracts';
import { parseProfile, wildcardProfile } from '@sideport/ipa';
import type { ItunesServer } from '../../../dev/itunes-server.js';
import * as schema from '../../../db/schema/index.js';
import { until } from '../../../test/agent-process.js';
import { buildIpa, storeApp, storeWith } from '../../../test/decrypt-support.js';
import { deviceInfo, enrollDevice, payForDevice } from '../../../test/device-flow.js';
import {
  createTestApp,
  databaseKinds,
  signedInUser,
  WEB_CLIENT,
  type TestApp,
} from '../../../test/harness.js';
import { dupSuffix } from '../../sign/worker.js';
import { capabilitiesAnswer } from './answer.js';

const APP_ID = 6300;
const APP_VER_ID = 863000001;
const BUNDLE_ID = 'com.example.capable';

describe.each(databaseKinds)('capability report on %s', (kind) => {
  let store: ItunesServer;
  let t: TestApp;
  let cookie: string;
  const userId = `carol_${kind}`;

  const versions = async (): Promise<AppEntry[]> => {
    const res = await t.app.inject({ url: `/api/version/KR/${APP_ID}`, headers: { cookie, ...WEB_CLIENT } });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };

  beforeAll(async () => {
    store = await storeWith([storeApp(APP_ID, BUNDLE_ID)]);
    t = await createTestApp(kind, { env: { ITUNES_BASE_URL: store.url } });
    cookie = await signedInUser(t, userId);
    // The sample app is the Xcode-built fixture: push, iCloud, associated domains, HealthKit ...
    const ipa = await buildIpa({ bundleId: BUNDLE_ID, version: '1.0', appVerId: String(APP_VER_ID) });
    await t.services.jobs.importIpa(ipa, { country: 'KR', appId: APP_ID });
    await enrollDevice(t, cookie, { UDID: '00008110-000A1B2C3D4E5F61', PRODUCT: 'iPhone15,2' });
    await payForDevice(t, cookie, 0);
    await until('the device to be Registered', async () =>
      (await deviceInfo(t, cookie))[0]?.status === 'Registered' ? true : undefined,
    );
  });
  afterAll(async () => {
    await t?.close();
    await store?.close();
  });

  it('reads the components when the version becomes Done and reports them for the team that signs', async () => {
    const [entry] = await versions();
    const report = entry!.capabilities!;
    const material = (await t.services.signing.signingMaterial(userId))!;
    const profile = parseProfile(material.profile);
    expect(report.team_id).toBe(profile.teamId);
    // The report's model of this server's profile is the dev identity's profile, key for key.
    expect(profile.entitlements).toEqual(wildcardProfile(profile.teamId).entitlements);
    const [keeping, dup] = report.modes;
    expect(keeping!.sign_types).toEqual([0, 1, 2, 3]);
    expect(keeping!.bundle_id).toBe(BUNDLE_ID);
    expect(keeping!.summary).toMatch(/^Loses push notifications, .* and \d+ more capabilities\.$/);
    const app = keeping!.components[0]!;
    expect(app).toMatchObject({ path: '', kind: 'app', bundle_id: BUNDLE_ID, outcome: 'signed' });
    for (const id of ['icloud', 'associated-domains', 'healthkit'])
      expect(app.capabilities.find((c) => c.id === id)?.status, id).toBe('lost');
    expect(app.capabilities.find((c) => c.id === 'push')).toEqual({
      id: 'push',
      name: 'Push notifications',
      status: 'lost',
      sentence: 'Push notifications will not arrive.',
      operator:
        "Apple grants Push notifications only to an explicit App ID with PUSH_NOTIFICATIONS enabled, which App Store Connect's API can create.",
    });
    expect(keeping!.install_note).toBeNull();
    expect(dup!.install_note).toBe('Installs beside the original app, as another app with data of its own.');
    expect(dup!.sign_types).toEqual([4]);
    expect(dup!.bundle_id).toBe(`${BUNDLE_ID}.${dupSuffix(userId, APP_ID)}`);
  });

  it("lists in the admin console what signing loses, the parts that lose it and the operator's options", async () => {
    const admin = await signedInUser(t, `capabilities_admin_${kind}`, 1);
    const refused = await t.app.inject({
      url: '/api/admin/capabilities',
      headers: { cookie, ...WEB_CLIENT },
    });
    expect(refused.statusCode).toBe(403);
    const res = await t.app.inject({
      url: '/api/admin/capabilities',
      headers: { cookie: admin, ...WEB_CLIENT },
    });
    expect(res.statusCode, res.body).toBe(200);
    const [entry] = res.json() as AdminCapabilityEntry[];
    expect(entry).toMatchObject({ app_id: String(APP_ID), app_ver_id: String(APP_VER_ID), version: '1.0' });
    expect(entry!.summary).toMatch(/^Loses push notifications/);
    const icloud = entry!.lost.find((l) => l.id === 'icloud')!;
    expect(icloud.parts).toEqual([entry!.lost[0]!.parts[0]]);
    expect(icloud.operator).toMatch(/It cannot create iCloud container identifiers \(iCloud\.…\)/);
  });

  it('says an install replaces the copy signed by the team a person moved from', async () => {
    const rows = await t.database.db.select().from(schema.versionComponents);
    const moved = capabilitiesAnswer({
      components: rows[0]!.components,
      teamId: 'NEWTEAM001',
      dupSuffix: 'dup0000000001',
      teamMoved: true,
    });
    expect(moved.modes[0]!.install_note).toMatch(/^Replaces the copy your previous team signed: /);
    expect(moved.modes[1]!.install_note).toMatch(/^Installs beside the original app/);
  });

  it('reads a version Done before on its first look, and answers null until then', async () => {
    await t.database.db
      .delete(schema.versionComponents)
      .where(eq(schema.versionComponents.appVerId, APP_VER_ID));
    const [before] = await versions();
    expect(before!.status).toBe('Done');
    expect(before!.capabilities).toBeNull();
    await t.services.components.settle();
    const [after] = await versions();
    expect(after!.capabilities!.modes[0]!.lost).toBeGreaterThan(0);
  });
});
