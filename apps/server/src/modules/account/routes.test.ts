import { accountInfo } from '@sideport/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ItunesServer } from '../../dev/itunes-server.js';
import { createTestApp, databaseKinds, signedInUser, WEB_CLIENT, type TestApp } from '../../test/harness.js';
import { makePremium, storeApp, storeWith } from '../../test/decrypt-support.js';
import { insertDevice } from '../devices/queries.js';

/** GET /api/info beyond the spec's fields: the current plan, today's use and each device's name. */
describe.each(databaseKinds)('account info on %s', (kind) => {
  let store: ItunesServer;
  let t: TestApp;

  beforeAll(async () => {
    store = await storeWith([storeApp(6201, 'com.example.counted'), storeApp(6202, 'com.example.counted2')]);
    t = await createTestApp(kind, {
      env: { ITUNES_BASE_URL: store.url, SIGN_IN_LIMIT_PER_ADDRESS: '10000', FREE_DAILY_LIMIT: '3' },
    });
  });
  afterAll(async () => {
    await t.close();
    await store.close();
  });

  const info = async (cookie: string) =>
    accountInfo.parse((await t.app.inject({ url: '/api/info', headers: { cookie } })).json());

  it("tells today's use against the limit, and the plan that gives it", async () => {
    const cookie = await signedInUser(t, `counter_${kind}`);
    expect(await info(cookie)).toMatchObject({ plan: null, used_today: 0, daily_limit: 3, premium: false });
    await t.app.inject({ url: '/api/decrypt/KR/6201', headers: { cookie, ...WEB_CLIENT } });
    expect(await info(cookie)).toMatchObject({ plan: null, used_today: 1, daily_limit: 3 });

    await makePremium(t, cookie, 3);
    const premium = await info(cookie);
    expect(premium).toMatchObject({ plan: 3, used_today: 1, daily_limit: 50, premium: true });
    expect(premium.expired_date).not.toBeNull();
    // A second request of the same app joins the first: it costs nothing.
    await t.app.inject({ url: '/api/decrypt/KR/6201', headers: { cookie, ...WEB_CLIENT } });
    await t.app.inject({ url: '/api/decrypt/KR/6202', headers: { cookie, ...WEB_CLIENT } });
    expect((await info(cookie)).used_today).toBe(2);
  });

  it('names each device as it named itself at enrollment', async () => {
    const id = `namer_${kind}`;
    const cookie = await signedInUser(t, id);
    await insertDevice(t.database.db, {
      userId: id,
      product: 'iPhone15,2',
      udid: 'UDID-1',
      deviceName: 'Ana’s iPhone',
    });
    await insertDevice(t.database.db, { userId: id, product: 'iPad13,4', udid: 'UDID-2' });
    expect((await info(cookie)).device_info).toEqual([
      { Product: 'iPhone15,2', UDID: 'UDID-1', status: 'Add', name: 'Ana’s iPhone' },
      { Product: 'iPad13,4', UDID: 'UDID-2', status: 'Add', name: null },
    ]);
  });
});
