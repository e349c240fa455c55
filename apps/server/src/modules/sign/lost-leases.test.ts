import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDylib } from '@sideport/ipa/test-support/toolchain';
import { signRequests } from '../../db/schema/index.js';
import type { ItunesServer } from '../../dev/itunes-server.js';
import { buildIpa, storeApp, storeWith } from '../../test/decrypt-support.js';
import { createTestApp, databaseKinds, signedInUser, WEB_CLIENT, type TestApp } from '../../test/harness.js';
import * as devices from '../devices/queries.js';
import * as q from './queries.js';

const APP_ID = 6300;
const APP_VER_ID = 863000001;
const MAX_ATTEMPTS = 2;
const MAX_LOST_LEASES = 4;
const LEASE_SECONDS = 30;
const LOST = 'The sign worker stopped before it finished.';

const work = mkdtempSync(path.join(tmpdir(), 'sideport-sign-lost-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/**
 * A sign's failures and its lost leases (a worker killed mid-sign) are counted apart
 * (docs/sign-service.md): lost leases give a sign up only after SIGN_MAX_LOST_LEASES, real
 * failures still after SIGN_MAX_ATTEMPTS.
 */
describe.each(databaseKinds)('sign failures and lost leases on %s', (kind) => {
  let store: ItunesServer;

  beforeAll(async () => {
    store = await storeWith([storeApp(APP_ID, 'com.example.signlost')]);
  });
  afterAll(async () => {
    await store?.close();
  });

  async function appWith(env: Record<string, string>, clock?: () => Date) {
    const t = await createTestApp(kind, {
      env: {
        ITUNES_BASE_URL: store.url,
        SIGN_IN_LIMIT_PER_ADDRESS: '10000',
        SIGN_MAX_ATTEMPTS: String(MAX_ATTEMPTS),
        SIGN_MAX_LOST_LEASES: String(MAX_LOST_LEASES),
        SIGN_LEASE_SECONDS: String(LEASE_SECONDS),
        ...env,
      },
      ...(clock ? { clock } : {}),
    });
    const user = `signer_${kind}`;
    const cookie = await signedInUser(t, user);
    await devices.insertDevice(t.database.db, {
      userId: user,
      product: 'iPhone15,2',
      udid: '00008110-0000000000000001',
      status: 'Registered',
    });
    const ipa = await buildIpa({
      bundleId: 'com.example.signlost',
      version: '1.0',
      appVerId: String(APP_VER_ID),
    });
    await t.services.jobs.importIpa(ipa, { country: 'KR', appId: APP_ID });
    return { t, cookie };
  }
  const rowOf = async (t: TestApp) =>
    (await t.database.db.select().from(signRequests).where(eq(signRequests.appVerId, APP_VER_ID)))[0]!;

  it('keeps a sign claimable after SIGN_MAX_ATTEMPTS lost leases, and gives it up at SIGN_MAX_LOST_LEASES saying why', async () => {
    let now = new Date('2026-11-23T10:00:00Z');
    // No worker of the server's own: this test claims as a worker that keeps dying.
    const { t, cookie } = await appWith({ SIGN_WORKERS: '0' }, () => now);
    try {
      const asked = await t.app.inject({
        method: 'PUT',
        url: `/api/sign/${APP_ID}/${APP_VER_ID}`,
        payload: { type: 0 },
        headers: { ...WEB_CLIENT, cookie },
      });
      expect(asked.json()).toMatchObject({ status: 'Pending' });
      const claim = () =>
        q.claimNextSign(t.database.db, {
          worker: 'doomed',
          now,
          leaseSeconds: LEASE_SECONDS,
          maxLostLeases: MAX_LOST_LEASES,
          lostReason: LOST,
        });

      expect(await claim()).toMatchObject({ status: 'Process', attempts: 1, lostLeases: 0, failures: 0 });
      for (let lost = 1; lost < MAX_LOST_LEASES; lost++) {
        now = new Date(now.getTime() + (LEASE_SECONDS + 1) * 1000);
        expect(await t.services.signWorkers.sweep()).toBe(0);
        expect(await claim()).toMatchObject({
          status: 'Process',
          attempts: lost + 1,
          lostLeases: lost,
          failures: 0,
          lastReason: `The sign worker stopped before it finished (lost lease ${lost} of ${MAX_LOST_LEASES}).`,
        });
      }
      expect(MAX_LOST_LEASES - 1).toBeGreaterThanOrEqual(MAX_ATTEMPTS);

      now = new Date(now.getTime() + (LEASE_SECONDS + 1) * 1000);
      expect(await t.services.signWorkers.sweep()).toBe(1);
      expect(await rowOf(t)).toMatchObject({
        status: 'No',
        state: 'idle',
        lostLeases: MAX_LOST_LEASES,
        failures: 0,
        lastReason: `The sign worker stopped before it finished: given up after ${MAX_LOST_LEASES} lost leases.`,
      });
      expect(await claim()).toBeUndefined();
    } finally {
      await t.close();
    }
  });

  it('still gives a sign up after SIGN_MAX_ATTEMPTS failures of a real worker', async () => {
    // The operator's IAP dylib is there when the server starts, and gone when it signs: every try fails.
    const dylib = path.join(work, `libiap-${kind}.dylib`);
    writeFileSync(
      dylib,
      readFileSync(buildDylib(work, 'iap', 'int iap(void) { return 1; }\n', '@rpath/libiap.dylib')),
    );
    const { t, cookie } = await appWith({ SIGN_WORKERS: '1', SIGN_DYLIBS_IAP: dylib });
    try {
      rmSync(dylib);
      const asked = await t.app.inject({
        method: 'PUT',
        url: `/api/sign/${APP_ID}/${APP_VER_ID}`,
        payload: { type: 1 },
        headers: { ...WEB_CLIENT, cookie },
      });
      expect(asked.json()).toMatchObject({ status: 'Pending' });
      await expect.poll(async () => (await rowOf(t)).state, { timeout: 120_000, interval: 100 }).toBe('idle');
      const row = await rowOf(t);
      expect(row).toMatchObject({
        status: 'No',
        attempts: MAX_ATTEMPTS,
        failures: MAX_ATTEMPTS,
        lostLeases: 0,
      });
      expect(row.lastReason).toContain(dylib);
    } finally {
      await t.close();
    }
  });
});
