import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ItunesServer } from '../../dev/itunes-server.js';
import { buildIpa, storeApp, storeWith } from '../../test/decrypt-support.js';
import { createTestApp, databaseKinds, signedInUser, WEB_CLIENT, type TestApp } from '../../test/harness.js';
import * as devices from '../devices/queries.js';
import * as q from './queries.js';

const APP_ID = 6400;
const BUNDLE_ID = 'com.example.signfair';
const VERSIONS = [864000001, 864000002, 864000003, 864000004, 864000005];

/**
 * The sign queue is fair between users (docs/sign-service.md, How a sign is made): one user's
 * many signs do not hold another user's few, the claim takes turns between them.
 */
describe.each(databaseKinds)('the sign queue between users on %s', (kind) => {
  let store: ItunesServer;
  let t: TestApp;

  beforeAll(async () => {
    store = await storeWith([storeApp(APP_ID, BUNDLE_ID)]);
    // No worker of the server's own: the test claims as one worker and watches whose sign it gets.
    t = await createTestApp(kind, {
      env: {
        ITUNES_BASE_URL: store.url,
        SIGN_WORKERS: '0',
        SIGN_IN_LIMIT_PER_ADDRESS: '10000',
        FREE_DAILY_LIMIT: '1000',
      },
    });
    for (const appVerId of VERSIONS) {
      const ipa = await buildIpa({ bundleId: BUNDLE_ID, version: '1.0', appVerId: String(appVerId) });
      await t.services.jobs.importIpa(ipa, { country: 'KR', appId: APP_ID });
    }
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await store?.close();
  });

  async function userWithDevice(id: string, udid: string) {
    const cookie = await signedInUser(t, id);
    await devices.insertDevice(t.database.db, {
      userId: id,
      product: 'iPhone15,2',
      udid,
      status: 'Registered',
    });
    return cookie;
  }

  async function askSign(cookie: string, appVerId: number) {
    const res = await t.app.inject({
      method: 'PUT',
      url: `/api/sign/${APP_ID}/${appVerId}`,
      payload: { type: 0 },
      headers: { ...WEB_CLIENT, cookie },
    });
    expect(res.json()).toMatchObject({ status: 'Pending' });
  }

  it("takes turns between two users' signs, whoever asked first and for how many", async () => {
    const many = `many_${kind}`;
    const few = `few_${kind}`;
    const manyCookie = await userWithDevice(many, '00008110-0000000000000A01');
    const fewCookie = await userWithDevice(few, '00008110-0000000000000B01');
    // One user asks for five signs, then the other for two.
    for (const appVerId of VERSIONS) await askSign(manyCookie, appVerId);
    for (const appVerId of VERSIONS.slice(0, 2)) await askSign(fewCookie, appVerId);

    const claimed: string[] = [];
    for (;;) {
      const row = await q.claimNextSign(t.database.db, {
        worker: 'the-only-worker',
        now: new Date(),
        leaseSeconds: 600,
        maxLostLeases: 10,
        lostReason: 'The sign worker stopped before it finished.',
      });
      if (!row) break;
      claimed.push(row.userId === many ? `many ${row.appVerId}` : `few ${row.appVerId}`);
    }
    // Each user's own signs go oldest first; between users, turn by turn.
    expect(claimed).toEqual([
      `many ${VERSIONS[0]}`,
      `few ${VERSIONS[0]}`,
      `many ${VERSIONS[1]}`,
      `few ${VERSIONS[1]}`,
      `many ${VERSIONS[2]}`,
      `many ${VERSIONS[3]}`,
      `many ${VERSIONS[4]}`,
    ]);
  });
});
