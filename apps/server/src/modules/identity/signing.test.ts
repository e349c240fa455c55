import { parseProfile } from '@sideport/ipa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, databaseKinds, signedInUser, type TestApp } from '../../test/harness.js';
import * as q from '../devices/queries.js';

const UDID_A = '00008110-000A1B2C3D4E5F60';
const UDID_B = '00008120-001122334455667A';

describe.each(databaseKinds)('signing material on %s', (kind) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(kind);
  });
  afterAll(() => t.close());

  /** A signed-in user with one device in `status`. */
  async function userWithDevice(user: string, udid: string, status: 'Pending' | 'Registered') {
    await signedInUser(t, user);
    await q.insertDevice(t.database.db, { userId: user, product: 'iPhone15,2', udid, status });
  }

  it('has nothing to sign with until a device is Registered', async () => {
    await userWithDevice(`nodevice_${kind}`, UDID_A, 'Pending');
    expect(await t.services.signing.signingMaterial(`nodevice_${kind}`)).toBeUndefined();
  });

  it("lists the user's Registered devices in a profile kept until that set changes", async () => {
    const user = `signer_${kind}`;
    await userWithDevice(user, UDID_A, 'Registered');
    const first = (await t.services.signing.signingMaterial(user))!;
    expect(first.identityKind).toBe('dev');
    expect(first.udids).toEqual([UDID_A]);
    const profile = parseProfile(first.profile);
    expect(profile.provisionedDevices).toEqual([UDID_A]);
    expect(profile.uuid).toBe(first.profileUuid);
    expect(profile.name).toContain('Sideport Dev (not Apple)');

    expect((await t.services.signing.signingMaterial(user))!.profileUuid).toBe(first.profileUuid);

    await q.insertDevice(t.database.db, {
      userId: user,
      product: 'iPad13,1',
      udid: UDID_B,
      status: 'Registered',
    });
    const second = (await t.services.signing.signingMaterial(user))!;
    expect(second.profileUuid).not.toBe(first.profileUuid);
    expect([...parseProfile(second.profile).provisionedDevices].sort()).toEqual([UDID_A, UDID_B]);
  });

  it('signs with one dev identity whatever the process: it is kept sealed in the database', async () => {
    await userWithDevice(`again_a_${kind}`, UDID_A, 'Registered');
    await userWithDevice(`again_b_${kind}`, UDID_B, 'Registered');
    const a = (await t.services.signing.signingMaterial(`again_a_${kind}`))!;
    const b = (await t.services.signing.signingMaterial(`again_b_${kind}`))!;
    expect(a.identity).toEqual(b.identity);
    expect(parseProfile(a.profile).teamId).toBe(parseProfile(b.profile).teamId);
  });
});
