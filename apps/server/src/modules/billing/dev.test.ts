import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { devices, subscriptions } from '../../db/schema/index.js';
import { ConfigError, loadConfig } from '../../platform/config.js';
import {
  countPayments,
  createTestApp,
  databaseKinds,
  signedInUser,
  WEB_CLIENT,
  type TestApp,
} from '../../test/harness.js';

const SAME_ORIGIN = { 'sec-fetch-site': 'same-origin' };

describe.each(databaseKinds)('test-mode (dev) billing on %s', (kind) => {
  let t: TestApp;
  let now = new Date('2026-03-31T10:00:00Z');
  let seq = 0;
  const uid = () => `dev_${kind}_${++seq}`;

  beforeAll(async () => {
    // Billing's hand-over (Pending) is what these check; registration has its own tests.
    t = await createTestApp(kind, {
      env: { SIGN_IN_LIMIT_PER_ADDRESS: '10000', REGISTRATION_INTERVAL_SECONDS: '0' },
      clock: () => now,
    });
  });
  afterAll(() => t.close());

  const get = (url: string, cookie: string, headers: Record<string, string> = {}) =>
    t.app.inject({ url, headers: { cookie, ...WEB_CLIENT, ...headers } });
  const post = (url: string, cookie: string, headers: Record<string, string> = SAME_ORIGIN) =>
    t.app.inject({
      method: 'POST',
      url,
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', ...headers },
      payload: '',
    });
  const paymentCount = (userId: string) => countPayments(t, userId);

  /** GET /api/pay/... and return the local checkout path. */
  async function checkout(url: string, cookie: string) {
    const res = await get(url, cookie);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const { url: checkoutUrl } = res.json() as { url: string };
    expect(checkoutUrl).toMatch(/^http:\/\/localhost\/billing\/dev-checkout\/[A-Za-z0-9_-]{24}$/);
    return new URL(checkoutUrl).pathname;
  }

  it.each([
    [0, '$3.99', 20, '2026-04-30T10:00:00.000Z'],
    [1, '$39.99', 20, '2027-03-31T10:00:00.000Z'],
    [3, '$6.99', 50, '2026-04-30T10:00:00.000Z'],
    [4, '$69.99', 50, '2027-03-31T10:00:00.000Z'],
  ])(
    'plan %i: the test-mode page shows %s; Pay gives premium with %i apps/day until %s',
    async (n, price, limit, until) => {
      const id = uid();
      const cookie = await signedInUser(t, id);
      const path = await checkout(`/api/pay/service/${n}`, cookie);

      const page = await get(path, cookie);
      expect(page.statusCode).toBe(200);
      expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(page.headers['content-security-policy']).toContain("form-action 'self'");
      expect(page.body).toContain('TEST MODE');
      expect(page.body).toContain(price);
      expect(page.body).toContain(
        `<form method="post" action="${path}/pay"><button type="submit" class="pay">Pay</button></form>`,
      );
      expect(page.body).toContain(
        `<form method="post" action="${path}/cancel"><button type="submit" class="cancel">Cancel</button></form>`,
      );

      const paid = await post(`${path}/pay`, cookie);
      expect(paid.statusCode).toBe(303);
      expect(paid.headers.location).toBe('http://localhost/my?checkout=success');

      const premium = await get('/api/premium', cookie);
      expect(premium.statusCode).toBe(200);
      expect(premium.json()).toEqual({ premium: true, expired_date: until });
      expect((await get('/api/info', cookie)).json()).toEqual({
        Id: id,
        premium: true,
        expired_date: until,
        daily_limit: limit,
        device_info: [],
        plan: n,
        used_today: 0,
      });
    },
  );

  it('Cancel returns to /my and changes nothing; the checkout cannot be paid afterwards', async () => {
    const id = uid();
    const cookie = await signedInUser(t, id);
    const path = await checkout('/api/pay/service/0', cookie);
    const canceled = await post(`${path}/cancel`, cookie);
    expect(canceled.statusCode).toBe(303);
    expect(canceled.headers.location).toBe('http://localhost/my?checkout=canceled');
    expect((await get('/api/premium', cookie)).statusCode).toBe(403);
    const late = await post(`${path}/pay`, cookie);
    expect(late.statusCode).toBe(410);
    expect(late.body).toBe('This test checkout has expired or was canceled.');
    expect((await get(path, cookie)).body).toContain('This test checkout has expired or was canceled.');
    expect(await paymentCount(id)).toBe(0);
  });

  it('a double click on Pay pays once', async () => {
    const id = uid();
    const cookie = await signedInUser(t, id);
    const path = await checkout('/api/pay/service/1', cookie);
    const [a, b] = await Promise.all([post(`${path}/pay`, cookie), post(`${path}/pay`, cookie)]);
    expect([a.statusCode, b.statusCode]).toEqual([303, 303]);
    expect((await post(`${path}/pay`, cookie)).statusCode).toBe(303);
    expect(await paymentCount(id)).toBe(1);
  });

  const planRows = (userId: string) =>
    t.database.db
      .select({ plan: subscriptions.plan, status: subscriptions.status })
      .from(subscriptions)
      .where(eq(subscriptions.userId, userId))
      .orderBy(subscriptions.plan);

  it('a second plan replaces the first: one subscription stays, with the new plan’s limit and expiry', async () => {
    const id = uid();
    const cookie = await signedInUser(t, id);
    await post(`${await checkout('/api/pay/service/4', cookie)}/pay`, cookie);
    const second = await checkout('/api/pay/service/0', cookie);
    expect((await get(second, cookie)).body).toContain(
      '<p class="note">Replaces your current plan, Decrypt Premium yearly, 50 apps/day, which ends when this one is paid.</p>',
    );
    expect((await post(`${second}/pay`, cookie)).statusCode).toBe(303);
    expect(await planRows(id)).toEqual([
      { plan: 0, status: 'active' },
      { plan: 4, status: 'canceled' },
    ]);
    expect((await get('/api/info', cookie)).json()).toMatchObject({
      premium: true,
      expired_date: '2026-04-30T10:00:00.000Z',
      daily_limit: 20,
    });
    expect(await paymentCount(id)).toBe(2);
  });

  it('two checkouts paid at once leave one subscription', async () => {
    const id = uid();
    const cookie = await signedInUser(t, id);
    const monthly = await checkout('/api/pay/service/0', cookie);
    const yearly = await checkout('/api/pay/service/1', cookie);
    const [a, b] = await Promise.all([post(`${monthly}/pay`, cookie), post(`${yearly}/pay`, cookie)]);
    expect([a.statusCode, b.statusCode]).toEqual([303, 303]);
    const rows = await planRows(id);
    expect(rows.map((r) => r.status).sort()).toEqual(['active', 'canceled']);
  });

  it('refuses the plan the user already has, opening no checkout', async () => {
    const id = uid();
    const cookie = await signedInUser(t, id);
    await post(`${await checkout('/api/pay/service/3', cookie)}/pay`, cookie);
    const again = await get('/api/pay/service/3', cookie);
    expect(again.statusCode).toBe(409);
    expect(again.headers['content-type']).toMatch(/^text\/plain/);
    expect(again.body).toBe('You already have this plan.');
    expect(await planRows(id)).toEqual([{ plan: 3, status: 'active' }]);
  });

  it('an expired test checkout cannot be paid', async () => {
    const cookie = await signedInUser(t, uid());
    const path = await checkout('/api/pay/service/0', cookie);
    const saved = now;
    try {
      now = new Date(now.getTime() + 2 * 3_600_000);
      expect((await post(`${path}/pay`, cookie)).statusCode).toBe(410);
    } finally {
      now = saved;
    }
  });

  it('the reset clears today’s usage through the same path', async () => {
    const id = uid();
    const cookie = await signedInUser(t, id);
    const billing = t.services.billing;
    for (let i = 0; i < 3; i++) await billing.consumeDecrypt(id);
    await expect(billing.consumeDecrypt(id)).rejects.toMatchObject({
      status: 429,
      message: 'Daily limit reached.',
    });
    const path = await checkout('/api/pay/service/5', cookie);
    expect((await get(path, cookie)).body).toContain('$0.99');
    expect((await post(`${path}/pay`, cookie)).statusCode).toBe(303);
    expect(await billing.dailyUsage(id)).toEqual({ day: '2026-03-31', used: 0, limit: 3, remaining: 3 });
    expect(await billing.consumeDecrypt(id)).toEqual({ used: 1, limit: 3 });
  });

  it('a device payment sets the device Pending', async () => {
    const id = uid();
    const cookie = await signedInUser(t, id);
    const device = await t.services.devices.addDevice({
      userId: id,
      product: 'iPhone16,1',
      udid: '00008120-0001',
    });
    const path = await checkout('/api/pay/device/0', cookie);
    expect((await get(path, cookie)).body).toContain('$19.99');
    const paid = await post(`${path}/pay`, cookie);
    expect(paid.statusCode).toBe(303);
    // Back to My page's Device tab, where the device's status follows.
    expect(paid.headers.location).toBe('http://localhost/my?checkout=success&tab=device');
    expect((await get('/api/info', cookie)).json()).toMatchObject({
      device_info: [{ Product: 'iPhone16,1', UDID: '00008120-0001', status: 'Pending' }],
    });
    const [row] = await t.database.db.select().from(devices).where(eq(devices.id, device.id));
    expect(row).toMatchObject({ status: 'Pending', paidYears: 1 });
  });

  it('another user’s checkout is not found', async () => {
    const owner = await signedInUser(t, uid());
    const other = await signedInUser(t, uid());
    const path = await checkout('/api/pay/service/0', owner);
    expect((await get(path, other)).statusCode).toBe(404);
    const res = await post(`${path}/pay`, other);
    expect(res.statusCode).toBe(404);
    expect(res.body).toBe('This checkout was not found.');
    expect((await get('/api/premium', other)).statusCode).toBe(403);
    expect((await get('/api/premium', owner)).statusCode).toBe(403);
  });

  it('refuses a cross-site Pay', async () => {
    const cookie = await signedInUser(t, uid());
    const path = await checkout('/api/pay/service/0', cookie);
    const res = await post(`${path}/pay`, cookie, { 'sec-fetch-site': 'cross-site' });
    expect(res.statusCode).toBe(403);
    expect(res.body).toBe('Cross-site requests are not allowed.');
    const foreign = await post(`${path}/pay`, cookie, { origin: 'https://evil.example' });
    expect(foreign.statusCode).toBe(403);
    expect((await get('/api/premium', cookie)).statusCode).toBe(403);
  });

  it('the test-mode portal names the plans it lists and links back to /my', async () => {
    const id = uid();
    const cookie = await signedInUser(t, id);
    await post(`${await checkout('/api/pay/service/3', cookie)}/pay`, cookie);
    const portal = await get('/api/portal', cookie);
    expect(portal.statusCode).toBe(200);
    expect(portal.json()).toEqual({ url: 'http://localhost/billing/dev-portal' });
    const page = await get('/billing/dev-portal', cookie);
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.body).toContain('TEST MODE');
    expect(page.body).toContain(
      '<tr><td>Decrypt Premium monthly, 50 apps/day</td><td>active</td><td class="date">2026-04-30</td></tr>',
    );
    expect(page.body).toContain(
      '<tr><td class="date">2026-03-31</td><td>Decrypt Premium monthly, 50 apps/day</td><td>$6.99</td></tr>',
    );
    expect(page.body).not.toMatch(/plan:|<td>3<\/td>/);
    expect(page.body).toContain('<a href="/my">Back to My page</a>');
  });

  it('has no Stripe webhook', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/webhooks/stripe', payload: {} });
    expect(res.statusCode).toBe(404);
  });

  it('answers 401 on the test-mode pages without a session', async () => {
    expect((await t.app.inject({ url: '/billing/dev-portal' })).statusCode).toBe(401);
    expect(
      (await t.app.inject({ method: 'POST', url: '/billing/dev-checkout/x/pay', headers: SAME_ORIGIN }))
        .statusCode,
    ).toBe(401);
  });

  it('uses PUBLIC_URL for the return addresses when set', async () => {
    const app = await createTestApp(kind, {
      env: { PUBLIC_URL: 'https://sideport.example' },
      clock: () => now,
    });
    try {
      const cookie = await signedInUser(app, uid());
      const res = await app.app.inject({ url: '/api/pay/service/0', headers: { cookie, ...WEB_CLIENT } });
      const { url } = res.json() as { url: string };
      expect(url).toMatch(/^https:\/\/sideport\.example\/billing\/dev-checkout\//);
      const paid = await app.app.inject({
        method: 'POST',
        url: `${new URL(url).pathname}/pay`,
        headers: {
          cookie,
          origin: 'https://sideport.example',
          'content-type': 'application/x-www-form-urlencoded',
        },
        payload: '',
      });
      expect(paid.headers.location).toBe('https://sideport.example/my?checkout=success');
    } finally {
      await app.close();
    }
  });
});

describe('billing configuration', () => {
  const stripeEnv = {
    STRIPE_SECRET_KEY: 'sk_test_x',
    STRIPE_WEBHOOK_SECRET: 'whsec_x',
    STRIPE_PRICE_MONTHLY_20: 'p1',
    STRIPE_PRICE_YEARLY_20: 'p2',
    STRIPE_PRICE_MONTHLY_50: 'p3',
    STRIPE_PRICE_YEARLY_50: 'p4',
    STRIPE_PRICE_RESET: 'p5',
    STRIPE_PRICE_DEVICE: 'p6',
  };

  it('refuses the test-mode provider in production unless allowed', async () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(ConfigError);
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(
      /STRIPE_SECRET_KEY: must be set in production/,
    );
    await expect(createTestApp('pglite', { env: { NODE_ENV: 'production' } })).rejects.toThrow(
      /BILLING_DEV_ALLOWED=true/,
    );
    // Production also wants SECRET_KEY (the sign service's sealed keys).
    const secretKey = { SECRET_KEY: 'x'.repeat(32) };
    expect(
      loadConfig({ NODE_ENV: 'production', BILLING_DEV_ALLOWED: 'true', ...secretKey }).BILLING_DEV_ALLOWED,
    ).toBe(true);
    expect(loadConfig({ NODE_ENV: 'production', ...stripeEnv, ...secretKey }).STRIPE_SECRET_KEY).toBe(
      'sk_test_x',
    );
  });

  it('names every Stripe variable missing beside STRIPE_SECRET_KEY', () => {
    expect(() => loadConfig({ STRIPE_SECRET_KEY: 'sk_test_x', STRIPE_PRICE_RESET: 'p5' })).toThrow(
      /STRIPE_WEBHOOK_SECRET: required[\s\S]*STRIPE_PRICE_MONTHLY_20: required[\s\S]*STRIPE_PRICE_YEARLY_50: required[\s\S]*STRIPE_PRICE_DEVICE: required when STRIPE_SECRET_KEY is set/,
    );
    expect(() => loadConfig({ STRIPE_SECRET_KEY: 'sk_test_x', STRIPE_PRICE_RESET: 'p5' })).not.toThrow(
      /STRIPE_PRICE_RESET/,
    );
  });

  it('checks STRIPE_API_URL is a URL', () => {
    expect(() => loadConfig({ ...stripeEnv, STRIPE_API_URL: 'localhost:12111' })).toThrow(
      /STRIPE_API_URL: must be an http:\/\/ or https:\/\/ URL/,
    );
  });
});
