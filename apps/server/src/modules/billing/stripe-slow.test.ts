/**
 * Stripe slower than the server waits for it (docs/architecture.md, When a part fails): a checkout
 * asked meanwhile is answered 503 with a sentence and Retry-After, not a spinner, and nothing is
 * lost or done twice once Stripe answers again. Against the real server and the Stripe double,
 * which records (and acts on) each request when it arrives, as Stripe does with a request whose
 * client gave up waiting.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  countPayments,
  createTestApp,
  databaseKinds,
  fixturesDir,
  signedInUser,
  WEB_CLIENT,
  type TestApp,
} from '../../test/harness.js';
import { startStripeServer, STRIPE_TEST_PRICES, type StripeServer } from '../../test/stripe-server.js';

const SECRET_KEY = 'sk_test_sideport_slow';
const WEBHOOK_SECRET = 'whsec_test_sideport_slow';
const signer = new Stripe(SECRET_KEY);

describe.each(databaseKinds)('Stripe slower than the server waits, on %s', (kind) => {
  let t: TestApp;
  let stripe: StripeServer;

  beforeAll(async () => {
    stripe = await startStripeServer({ secretKey: SECRET_KEY });
    t = await createTestApp(kind, {
      env: {
        STRIPE_SECRET_KEY: SECRET_KEY,
        STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
        STRIPE_API_URL: stripe.url,
        // A second per answer, so a call given up (tried 3 times) takes seconds, not a minute.
        STRIPE_TIMEOUT_MS: '1000',
        ...STRIPE_TEST_PRICES,
        SIGN_IN_LIMIT_PER_ADDRESS: '10000',
        // The payment's hand-over (Pending) is what this checks; registration has its own tests.
        REGISTRATION_INTERVAL_SECONDS: '0',
      },
    });
  });
  afterAll(async () => {
    await t?.close();
    await stripe?.close();
  });

  const get = (url: string, cookie: string) => t.app.inject({ url, headers: { cookie, ...WEB_CLIENT } });
  const deliver = (event: unknown) => {
    const payload = JSON.stringify(event);
    return t.app.inject({
      method: 'POST',
      url: '/api/webhooks/stripe',
      headers: {
        'stripe-signature': signer.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }),
        'content-type': 'application/json; charset=utf-8',
      },
      payload,
    });
  };

  it('answers a checkout 503 with a sentence and Retry-After while Stripe is slow, then takes one payment once it answers', async () => {
    const userId = `slow_${kind}`;
    const cookie = await signedInUser(t, userId);
    const device = await t.services.devices.addDevice({
      userId,
      product: 'iPhone15,2',
      udid: '00008110-000A1B2C3D4E5F61',
    });

    // Every answer comes after the server stopped waiting for it.
    stripe.delayMs = 5000;
    const refused = await get('/api/pay/device/0', cookie);
    expect([refused.statusCode, refused.headers['retry-after'], refused.body]).toEqual([
      503,
      '30',
      'Payments are unavailable right now. Please retry later.',
    ]);
    expect(refused.headers['content-type']).toMatch(/^text\/plain/);
    expect(await t.services.metrics.render()).toMatch(
      /sideport_dependency_faults_total\{part="stripe"\} [1-9]/,
    );
    // Stripe got the customer (each try under one idempotency key): one customer, however many tries.
    const customerCalls = stripe.requests.filter((r) => r.path === '/v1/customers');
    expect(customerCalls.length).toBeGreaterThan(0);
    expect(new Set(customerCalls.map((r) => r.idempotencyKey))).toEqual(
      new Set([`sideport-customer-${userId}`]),
    );

    // Stripe answers again: the same checkout is opened, for the customer Stripe made the first time.
    stripe.delayMs = 0;
    const opened = await get('/api/pay/device/0', cookie);
    expect(opened.statusCode, opened.body).toBe(200);
    const session = stripe.requests.filter((r) => r.path === '/v1/checkout/sessions').at(-1)!.form;
    expect(session).toMatchObject({ 'metadata[device_id]': String(device.id), 'metadata[user_id]': userId });
    const customers = stripe.requests.filter((r) => r.path === '/v1/customers');
    expect(new Set(customers.map((r) => r.idempotencyKey)).size).toBe(1);

    // The user pays; Stripe's event, delivered twice as Stripe may, counts one payment.
    const event = JSON.parse(
      readFileSync(path.join(fixturesDir, 'stripe/stripe-ruby-mock_checkout.session.completed.json'), 'utf8'),
    ) as { id: string; created: number; data: { object: Record<string, unknown> } };
    event.id = `evt_slow_${kind}`;
    event.created = Math.floor(Date.now() / 1000);
    Object.assign(event.data.object, {
      id: `cs_slow_${kind}`,
      customer: session.customer,
      client_reference_id: userId,
      mode: 'payment',
      metadata: { user_id: userId, item: 'device', device_index: '0', device_id: String(device.id) },
      subscription: null,
      payment_status: 'paid',
      amount_total: 99,
    });
    expect((await deliver(event)).json()).toEqual({ received: true, outcome: 'applied' });
    expect((await deliver(event)).json()).toEqual({ received: true, outcome: 'duplicate' });
    expect(await countPayments(t, userId)).toBe(1);
    expect((await get('/api/info', cookie)).json()).toMatchObject({
      device_info: [{ UDID: '00008110-000A1B2C3D4E5F61', status: 'Pending' }],
    });
  });
});
