import { readFileSync } from 'node:fs';
import path from 'node:path';
import { eq, sql } from 'drizzle-orm';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billingEvents, devices, subscriptions } from '../../db/schema/index.js';
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

const SECRET_KEY = 'sk_test_sideport';
const WEBHOOK_SECRET = 'whsec_test_sideport';
const PRICES = STRIPE_TEST_PRICES;
const PLAN_PRICE: Record<number, string> = {
  0: PRICES.STRIPE_PRICE_MONTHLY_20,
  1: PRICES.STRIPE_PRICE_YEARLY_20,
  3: PRICES.STRIPE_PRICE_MONTHLY_50,
  4: PRICES.STRIPE_PRICE_YEARLY_50,
};
const DAY_S = 86_400;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
/** A real webhook event from the shared fixtures, parsed so a test can adapt ids and metadata. */
const stripeFixture = (name: string): Json =>
  JSON.parse(readFileSync(path.join(fixturesDir, 'stripe', name), 'utf8')) as Json;

// Only for signatures: generateTestHeaderString makes the header Stripe itself would send.
const signer = new Stripe(SECRET_KEY);

describe.each(databaseKinds)('Stripe billing on %s', (kind) => {
  let t: TestApp;
  let stripe: StripeServer;
  let now = new Date();
  let seq = 0;
  const nowS = () => Math.floor(now.getTime() / 1000);
  const uid = (p: string) => `${p}_${kind}_${++seq}`;

  beforeAll(async () => {
    stripe = await startStripeServer({ secretKey: SECRET_KEY });
    t = await createTestApp(kind, {
      env: {
        STRIPE_SECRET_KEY: SECRET_KEY,
        STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
        STRIPE_API_URL: stripe.url,
        ...PRICES,
        SIGN_IN_LIMIT_PER_ADDRESS: '10000',
        // Billing's hand-over (Pending) is what these check; registration has its own tests.
        REGISTRATION_INTERVAL_SECONDS: '0',
      },
      clock: () => now,
    });
  });
  afterAll(async () => {
    await t.close();
    await stripe.close();
  });

  const get = (url: string, cookie: string) => t.app.inject({ url, headers: { cookie, ...WEB_CLIENT } });
  const deliverRaw = (payload: string, signature: string) =>
    t.app.inject({
      method: 'POST',
      url: '/api/webhooks/stripe',
      headers: { 'stripe-signature': signature, 'content-type': 'application/json; charset=utf-8' },
      payload,
    });
  const deliver = (event: Json) => {
    const payload = JSON.stringify(event);
    return deliverRaw(payload, signer.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }));
  };
  const eventCount = async () =>
    (await t.database.db.select({ n: sql<number>`count(*)::int` }).from(billingEvents))[0]!.n;
  const paymentCount = (userId: string) => countPayments(t, userId);
  const subscriptionRows = (userId: string) =>
    t.database.db
      .select({ plan: subscriptions.plan, status: subscriptions.status, end: subscriptions.currentPeriodEnd })
      .from(subscriptions)
      .where(eq(subscriptions.userId, userId))
      .orderBy(subscriptions.subscriptionId);

  /** Signs up and opens a checkout, so the user has a Stripe customer; returns the session's form. */
  async function userWithCheckout(service = 0) {
    const id = uid('user');
    const cookie = await signedInUser(t, id);
    const res = await get(`/api/pay/service/${service}`, cookie);
    expect(res.statusCode).toBe(200);
    const form = stripe.requests.filter((r) => r.path === '/v1/checkout/sessions').at(-1)!.form;
    return { id, cookie, customer: form.customer!, form, url: (res.json() as { url: string }).url };
  }

  // Events built from the real fixtures, with our ids and prices.
  function subscriptionEvent(o: {
    type?: string;
    sub: string;
    customer: string;
    status: string;
    end: number;
    plan?: number;
    created?: number;
    cancelAtPeriodEnd?: boolean;
  }) {
    const e = stripeFixture('stripe-ruby-mock_customer.subscription.updated.json');
    e.id = uid('evt');
    e.type = o.type ?? 'customer.subscription.updated';
    e.created = o.created ?? nowS();
    const s = e.data.object;
    Object.assign(s, { id: o.sub, customer: o.customer, status: o.status, current_period_end: o.end });
    if (o.cancelAtPeriodEnd !== undefined) s.cancel_at_period_end = o.cancelAtPeriodEnd;
    s.items.data[0].price.id = PLAN_PRICE[o.plan ?? 0];
    s.items.data[0].plan.id = PLAN_PRICE[o.plan ?? 0];
    return e;
  }
  function invoicePaid(o: { sub: string; customer: string; end: number; plan?: number; created?: number }) {
    const e = stripeFixture('stripe-ruby-mock_invoice.paid.json');
    e.id = uid('evt');
    e.created = o.created ?? nowS();
    const inv = e.data.object;
    Object.assign(inv, { id: uid('in'), customer: o.customer, subscription: o.sub, amount_paid: 399 });
    Object.assign(inv.lines.data[0], {
      subscription: o.sub,
      period: { start: o.end - 30 * DAY_S, end: o.end },
    });
    inv.lines.data[0].price.id = PLAN_PRICE[o.plan ?? 0];
    return e;
  }
  function checkoutCompleted(o: {
    customer: string;
    userId: string;
    mode: 'subscription' | 'payment';
    metadata: Record<string, string>;
    sub?: string;
    created?: number;
  }) {
    const e = stripeFixture('stripe-ruby-mock_checkout.session.completed.json');
    e.id = uid('evt');
    e.created = o.created ?? nowS();
    Object.assign(e.data.object, {
      id: uid('cs'),
      customer: o.customer,
      client_reference_id: o.userId,
      mode: o.mode,
      metadata: o.metadata,
      subscription: o.sub ?? null,
      payment_status: 'paid',
      amount_total: o.mode === 'payment' ? 99 : 399,
    });
    return e;
  }

  async function premiumOf(cookie: string) {
    const res = await get('/api/premium', cookie);
    return res.statusCode === 200 ? (res.json() as { expired_date: string }).expired_date : res.statusCode;
  }

  describe('checkout', () => {
    it.each([
      [0, 'price_monthly_20'],
      [1, 'price_yearly_20'],
      [3, 'price_monthly_50'],
      [4, 'price_yearly_50'],
    ])('plan %i opens a subscription Checkout Session with its configured price', async (n, price) => {
      const before = stripe.requests.length;
      const { id, form, url, customer } = await userWithCheckout(n);
      expect(url).toMatch(/^https:\/\/checkout\.stripe\.test\/c\/pay\/cs_test_/);
      const sent = stripe.requests.slice(before);
      expect(sent.map((r) => `${r.method} ${r.path}`)).toEqual([
        'POST /v1/customers',
        'POST /v1/checkout/sessions',
      ]);
      expect(sent[0]!.form).toMatchObject({ 'metadata[user_id]': id });
      expect(sent[0]!.idempotencyKey).toBe(`sideport-customer-${id}`);
      expect(form).toMatchObject({
        mode: 'subscription',
        customer,
        client_reference_id: id,
        'line_items[0][price]': price,
        'line_items[0][quantity]': '1',
        'metadata[user_id]': id,
        'metadata[item]': `plan:${n}`,
        'subscription_data[metadata][user_id]': id,
        'subscription_data[metadata][item]': `plan:${n}`,
        success_url: 'http://localhost/my?checkout=success',
        cancel_url: 'http://localhost/my?checkout=canceled',
      });
    });

    it('creates the Stripe customer once per user', async () => {
      const { cookie, customer } = await userWithCheckout(0);
      const before = stripe.requests.length;
      expect((await get('/api/pay/service/5', cookie)).statusCode).toBe(200);
      const sent = stripe.requests.slice(before);
      expect(sent.map((r) => r.path)).toEqual(['/v1/checkout/sessions']);
      expect(sent[0]!.form).toMatchObject({
        mode: 'payment',
        customer,
        'line_items[0][price]': 'price_reset',
        'metadata[item]': 'reset',
        'payment_intent_data[metadata][item]': 'reset',
      });
    });

    it.each(['2', '6', '9', 'x', '01', '-1'])(
      'answers 400 Unknown service. for service %s and calls nothing',
      async (n) => {
        const cookie = await signedInUser(t, uid('user'));
        const before = stripe.requests.length;
        const res = await get(`/api/pay/service/${n}`, cookie);
        expect(res.statusCode).toBe(400);
        expect(res.headers['content-type']).toMatch(/^text\/plain/);
        expect(res.body).toBe('Unknown service.');
        expect(stripe.requests.length).toBe(before);
      },
    );

    it('needs a signed-in user', async () => {
      for (const url of ['/api/pay/service/0', '/api/pay/device/0', '/api/portal', '/api/premium']) {
        const res = await t.app.inject({ url });
        expect(res.statusCode).toBe(401);
        expect(res.body).toBe('Please sign in.');
      }
    });

    it('answers 503 with a sentence when Stripe refuses', async () => {
      const cookie = await signedInUser(t, uid('user'));
      stripe.failNext(400, 'invalid_request_error', 'No such price: price_monthly_20');
      const res = await get('/api/pay/service/0', cookie);
      expect(res.statusCode).toBe(503);
      expect(res.body).toBe('Payments are unavailable right now. Please retry later.');
      expect(res.headers['retry-after']).toBe('30');
    });

    it('answers 503 with Retry-After while Stripe fails (5xx), counts it, and opens the checkout once it answers', async () => {
      const cookie = await signedInUser(t, uid('user'));
      stripe.failNext(500, 'api_error', 'An unknown error occurred.');
      const refused = await get('/api/pay/service/0', cookie);
      expect([refused.statusCode, refused.headers['retry-after'], refused.body]).toEqual([
        503,
        '30',
        'Payments are unavailable right now. Please retry later.',
      ]);
      expect(await t.services.metrics.render()).toMatch(
        /sideport_dependency_faults_total\{part="stripe"\} [1-9]/,
      );
      const again = await get('/api/pay/service/0', cookie);
      expect(again.statusCode, again.body).toBe(200);
      expect((again.json() as { url: string }).url).toMatch(/^http/);
    });

    it('opens the Billing Portal for the user’s customer, returning to /my', async () => {
      const { cookie, customer } = await userWithCheckout(0);
      const res = await get('/api/portal', cookie);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({
        url: expect.stringMatching(/^https:\/\/billing\.stripe\.test\/p\/session\/bps_test_/),
      });
      const sent = stripe.requests.at(-1)!;
      expect(sent.path).toBe('/v1/billing_portal/sessions');
      expect(sent.form).toEqual({ customer, return_url: 'http://localhost/my' });
    });
  });

  describe('plans through webhooks', () => {
    it.each([
      [0, 20],
      [1, 20],
      [3, 50],
      [4, 50],
    ])('plan %i: checkout completed + invoice paid gives premium with %i apps/day', async (n, limit) => {
      const { id, cookie, customer } = await userWithCheckout(n);
      expect(await premiumOf(cookie)).toBe(403);
      const sub = uid('sub');
      const end = nowS() + (n === 1 || n === 4 ? 365 : 30) * DAY_S;
      const completed = await deliver(
        checkoutCompleted({
          customer,
          userId: id,
          mode: 'subscription',
          sub,
          metadata: { user_id: id, item: `plan:${n}` },
        }),
      );
      expect(completed.statusCode).toBe(200);
      expect(completed.json()).toEqual({ received: true, outcome: 'applied' });
      expect((await deliver(invoicePaid({ sub, customer, end, plan: n }))).json()).toEqual({
        received: true,
        outcome: 'applied',
      });
      const expiry = new Date(end * 1000).toISOString();
      const premium = await get('/api/premium', cookie);
      expect(premium.statusCode).toBe(200);
      expect(premium.json()).toEqual({ premium: true, expired_date: expiry });
      const info = await get('/api/info', cookie);
      expect(info.json()).toEqual({
        Id: id,
        premium: true,
        expired_date: expiry,
        daily_limit: limit,
        device_info: [],
        plan: n,
        used_today: 0,
      });
      expect(await paymentCount(id)).toBe(1);
    });

    it('answers 403 Need decrypt premium. to a free user', async () => {
      const cookie = await signedInUser(t, uid('user'));
      const res = await get('/api/premium', cookie);
      expect(res.statusCode).toBe(403);
      expect(res.headers['content-type']).toMatch(/^text\/plain/);
      expect(res.body).toBe('Need decrypt premium.');
      expect((await get('/api/info', cookie)).json()).toMatchObject({
        premium: false,
        expired_date: null,
        daily_limit: 3,
      });
    });

    it('a canceled subscription (deleted) ends premium at once', async () => {
      const { cookie, customer } = await userWithCheckout(0);
      const sub = uid('sub');
      const end = nowS() + 30 * DAY_S;
      await deliver(invoicePaid({ sub, customer, end }));
      expect(typeof (await premiumOf(cookie))).toBe('string');
      const deleted = subscriptionEvent({
        type: 'customer.subscription.deleted',
        sub,
        customer,
        status: 'canceled',
        end,
      });
      expect((await deliver(deleted)).statusCode).toBe(200);
      expect(await premiumOf(cookie)).toBe(403);
      expect((await get('/api/info', cookie)).json()).toMatchObject({
        premium: false,
        expired_date: null,
        daily_limit: 3,
      });
    });

    it('an expired subscription (period end passed) is not premium', async () => {
      const { cookie, customer } = await userWithCheckout(0);
      const end = nowS() + 2 * DAY_S;
      await deliver(invoicePaid({ sub: uid('sub'), customer, end }));
      expect(await premiumOf(cookie)).toBe(new Date(end * 1000).toISOString());
      const saved = now;
      try {
        now = new Date((end + 1) * 1000);
        expect(await premiumOf(cookie)).toBe(403);
      } finally {
        now = saved;
      }
    });

    it('a user paying twice keeps the latest expiry and the larger limit', async () => {
      const { id, cookie, customer } = await userWithCheckout(0);
      const monthEnd = nowS() + 30 * DAY_S;
      const yearEnd = nowS() + 365 * DAY_S;
      await deliver(invoicePaid({ sub: uid('sub'), customer, end: yearEnd, plan: 4 }));
      await deliver(invoicePaid({ sub: uid('sub'), customer, end: monthEnd, plan: 0 }));
      expect((await get('/api/info', cookie)).json()).toMatchObject({
        premium: true,
        expired_date: new Date(yearEnd * 1000).toISOString(),
        daily_limit: 50,
      });
      expect(await paymentCount(id)).toBe(2);
    });

    it('a renewal (next invoice of the same subscription) moves the expiry forward', async () => {
      const { cookie, customer } = await userWithCheckout(1);
      const sub = uid('sub');
      const first = nowS() + 365 * DAY_S;
      await deliver(invoicePaid({ sub, customer, end: first, plan: 1 }));
      await deliver(invoicePaid({ sub, customer, end: first + 365 * DAY_S, plan: 1 }));
      expect(await premiumOf(cookie)).toBe(new Date((first + 365 * DAY_S) * 1000).toISOString());
    });

    it('records a subscription canceled at its period end as one that will not renew, and one resumed as renewing', async () => {
      const { id, customer } = await userWithCheckout(0);
      const sub = uid('sub');
      const end = nowS() + 30 * DAY_S;
      const endsAtPeriodEnd = async () =>
        (
          await t.database.db
            .select({ ends: subscriptions.endsAtPeriodEnd })
            .from(subscriptions)
            .where(eq(subscriptions.userId, id))
        ).map((r) => r.ends);
      await deliver(subscriptionEvent({ sub, customer, status: 'active', end, created: nowS() - 20 }));
      expect(await endsAtPeriodEnd()).toEqual([false]);
      const canceled = { sub, customer, status: 'active', end, cancelAtPeriodEnd: true };
      await deliver(subscriptionEvent({ ...canceled, created: nowS() - 10 }));
      expect(await endsAtPeriodEnd()).toEqual([true]);
      // An older event delivered late does not undo the newer one.
      await deliver(subscriptionEvent({ ...canceled, cancelAtPeriodEnd: false, created: nowS() - 15 }));
      expect(await endsAtPeriodEnd()).toEqual([true]);
      await deliver(subscriptionEvent({ ...canceled, cancelAtPeriodEnd: false, created: nowS() }));
      expect(await endsAtPeriodEnd()).toEqual([false]);
    });

    it('a replayed event is applied once', async () => {
      const { id, cookie, customer } = await userWithCheckout(0);
      const event = invoicePaid({ sub: uid('sub'), customer, end: nowS() + 30 * DAY_S });
      expect((await deliver(event)).json()).toEqual({ received: true, outcome: 'applied' });
      const events = await eventCount();
      const replay = await deliver(event);
      expect(replay.statusCode).toBe(200);
      expect(replay.json()).toEqual({ received: true, outcome: 'duplicate' });
      expect(await eventCount()).toBe(events);
      expect(await paymentCount(id)).toBe(1);
      expect(typeof (await premiumOf(cookie))).toBe('string');
    });

    it('concurrent deliveries of one event apply it once', async () => {
      const { id, customer } = await userWithCheckout(0);
      const event = invoicePaid({ sub: uid('sub'), customer, end: nowS() + 30 * DAY_S });
      const answers = await Promise.all(Array.from({ length: 6 }, () => deliver(event)));
      expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 200, 200, 200, 200]);
      const outcomes = answers.map((a) => (a.json() as { outcome: string }).outcome).sort();
      expect(outcomes).toEqual(['applied', 'duplicate', 'duplicate', 'duplicate', 'duplicate', 'duplicate']);
      expect(await paymentCount(id)).toBe(1);
    });

    it('out-of-order subscription events end in the same state as in order', async () => {
      const t0 = nowS() - 100;
      const end1 = nowS() + 30 * DAY_S;
      const end2 = end1 + 30 * DAY_S;
      const history = (sub: string, customer: string, userId: string) => [
        subscriptionEvent({
          type: 'customer.subscription.created',
          sub,
          customer,
          status: 'incomplete',
          end: end1,
          created: t0,
        }),
        checkoutCompleted({
          customer,
          userId,
          mode: 'subscription',
          sub,
          metadata: { user_id: userId, item: 'plan:0' },
          created: t0 + 1,
        }),
        invoicePaid({ sub, customer, end: end1, created: t0 + 1 }),
        subscriptionEvent({ sub, customer, status: 'active', end: end1, created: t0 + 1 }),
        subscriptionEvent({ sub, customer, status: 'past_due', end: end2, created: t0 + 50 }),
        invoicePaid({ sub, customer, end: end2, created: t0 + 60 }),
        subscriptionEvent({ sub, customer, status: 'active', end: end2, plan: 3, created: t0 + 60 }),
      ];
      const inOrder = await userWithCheckout(0);
      const reversed = await userWithCheckout(0);
      const shuffled = await userWithCheckout(0);
      for (const e of history(uid('sub'), inOrder.customer, inOrder.id))
        expect((await deliver(e)).statusCode).toBe(200);
      for (const e of history(uid('sub'), reversed.customer, reversed.id).reverse())
        expect((await deliver(e)).statusCode).toBe(200);
      const mixed = history(uid('sub'), shuffled.customer, shuffled.id);
      for (const i of [4, 0, 6, 2, 5, 1, 3]) expect((await deliver(mixed[i]!)).statusCode).toBe(200);

      const expected = [{ plan: 3, status: 'active', end: new Date(end2 * 1000) }];
      expect(await subscriptionRows(inOrder.id)).toEqual(expected);
      expect(await subscriptionRows(reversed.id)).toEqual(expected);
      expect(await subscriptionRows(shuffled.id)).toEqual(expected);
      for (const u of [inOrder, reversed, shuffled]) {
        expect((await get('/api/info', u.cookie)).json()).toMatchObject({ premium: true, daily_limit: 50 });
      }
    });

    it('a deletion delivered before older updates still ends in canceled', async () => {
      const { id, cookie, customer } = await userWithCheckout(0);
      const sub = uid('sub');
      const end = nowS() + 30 * DAY_S;
      await deliver(
        subscriptionEvent({
          type: 'customer.subscription.deleted',
          sub,
          customer,
          status: 'canceled',
          end,
          created: nowS(),
        }),
      );
      await deliver(invoicePaid({ sub, customer, end, created: nowS() - 10 }));
      await deliver(subscriptionEvent({ sub, customer, status: 'active', end, created: nowS() - 10 }));
      expect(await subscriptionRows(id)).toEqual([
        { plan: 0, status: 'canceled', end: new Date(end * 1000) },
      ]);
      expect(await premiumOf(cookie)).toBe(403);
    });
  });

  describe('changing plan', () => {
    const plansOf = async (userId: string) =>
      (await subscriptionRows(userId))
        .map(({ plan, status }) => ({ plan, status }))
        .sort((a, b) => a.plan - b.plan);

    /** A user whose checkout for plan n completed and was paid: Stripe holds the subscription. */
    async function subscriber(n: number) {
      const u = await userWithCheckout(n);
      const sub = uid('sub');
      stripe.subscriptions.set(sub, { customer: u.customer, status: 'active' });
      const metadata = { user_id: u.id, item: `plan:${n}` };
      await deliver(
        checkoutCompleted({ customer: u.customer, userId: u.id, mode: 'subscription', sub, metadata }),
      );
      await deliver(invoicePaid({ sub, customer: u.customer, end: nowS() + 30 * DAY_S, plan: n }));
      return { ...u, sub };
    }
    /** The user opens a checkout for plan n, and Stripe makes its subscription on payment. */
    async function newPlanCheckout(u: { id: string; cookie: string; customer: string }, n: number) {
      expect((await get(`/api/pay/service/${n}`, u.cookie)).statusCode).toBe(200);
      const sub = uid('sub');
      stripe.subscriptions.set(sub, { customer: u.customer, status: 'active' });
      const metadata = { user_id: u.id, item: `plan:${n}` };
      return {
        sub,
        form: stripe.requests.at(-1)!.form,
        completed: checkoutCompleted({
          customer: u.customer,
          userId: u.id,
          mode: 'subscription',
          sub,
          metadata,
        }),
      };
    }
    const sentSince = (before: number) =>
      stripe.requests
        .slice(before)
        .map((r) => ({ call: `${r.method} ${r.path.split('?')[0]}`, form: r.form }));

    it('the new plan’s paid checkout cancels the old subscription at Stripe, at once and prorated', async () => {
      const u = await subscriber(3);
      const next = await newPlanCheckout(u, 0);
      expect(next.form['custom_text[submit][message]']).toBe(
        'Replaces your current plan, Decrypt Premium monthly, 50 apps/day, which ends when this one is paid. ' +
          'Its unused time is credited to your account.',
      );
      const before = stripe.requests.length;
      expect((await deliver(next.completed)).json()).toEqual({ received: true, outcome: 'applied' });
      expect(sentSince(before)).toEqual([
        {
          call: `DELETE /v1/subscriptions/${u.sub}`,
          form: {
            prorate: 'true',
            invoice_now: 'true',
            'cancellation_details[comment]': 'Replaced by a new plan.',
          },
        },
      ]);
      expect(stripe.subscriptions.get(u.sub)!.status).toBe('canceled');
      expect(stripe.subscriptions.get(next.sub)!.status).toBe('active');
      expect(await plansOf(u.id)).toEqual([
        { plan: 0, status: 'active' },
        { plan: 3, status: 'canceled' },
      ]);
      const end = nowS() + 30 * DAY_S;
      await deliver(invoicePaid({ sub: next.sub, customer: u.customer, end, plan: 0 }));
      expect((await get('/api/info', u.cookie)).json()).toMatchObject({
        premium: true,
        expired_date: new Date(end * 1000).toISOString(),
        daily_limit: 20,
      });
      // Stripe's own word on the old subscription changes nothing more.
      const deleted = subscriptionEvent({
        type: 'customer.subscription.deleted',
        sub: u.sub,
        customer: u.customer,
        status: 'canceled',
        end: nowS() + 30 * DAY_S,
        plan: 3,
      });
      expect((await deliver(deleted)).statusCode).toBe(200);
      expect(await plansOf(u.id)).toEqual([
        { plan: 0, status: 'active' },
        { plan: 3, status: 'canceled' },
      ]);
    });

    it('answers 503 when Stripe fails the cancel; its redelivery of the event finishes it', async () => {
      const u = await subscriber(0);
      const next = await newPlanCheckout(u, 4);
      stripe.failNext(500, 'api_error', 'An unknown error occurred.');
      const failed = await deliver(next.completed);
      expect(failed.statusCode).toBe(503);
      expect(failed.body).toBe('Payments are unavailable right now. Please retry later.');
      // The old plan no longer counts while it is being replaced.
      expect(await plansOf(u.id)).toEqual([
        { plan: 0, status: 'replacing' },
        { plan: 4, status: 'active' },
      ]);
      expect(stripe.subscriptions.get(u.sub)!.status).toBe('active');
      expect((await deliver(next.completed)).json()).toEqual({ received: true, outcome: 'duplicate' });
      expect(stripe.subscriptions.get(u.sub)!.status).toBe('canceled');
      expect(await plansOf(u.id)).toEqual([
        { plan: 0, status: 'canceled' },
        { plan: 4, status: 'active' },
      ]);
    });

    it('takes a subscription Stripe has already canceled as ended', async () => {
      const u = await subscriber(1);
      stripe.subscriptions.get(u.sub)!.status = 'canceled';
      const next = await newPlanCheckout(u, 3);
      expect((await deliver(next.completed)).json()).toEqual({ received: true, outcome: 'applied' });
      expect(await plansOf(u.id)).toEqual([
        { plan: 1, status: 'canceled' },
        { plan: 3, status: 'active' },
      ]);
    });

    it('replaces nothing until a delayed payment succeeds', async () => {
      const u = await subscriber(0);
      const next = await newPlanCheckout(u, 3);
      next.completed.data.object.payment_status = 'unpaid';
      expect((await deliver(next.completed)).json()).toEqual({ received: true, outcome: 'applied' });
      expect(stripe.subscriptions.get(u.sub)!.status).toBe('active');
      expect(await plansOf(u.id)).toEqual([
        { plan: 0, status: 'active' },
        { plan: 3, status: 'incomplete' },
      ]);
      const succeeded = structuredClone(next.completed);
      Object.assign(succeeded, { id: uid('evt'), type: 'checkout.session.async_payment_succeeded' });
      succeeded.data.object.payment_status = 'paid';
      expect((await deliver(succeeded)).json()).toEqual({ received: true, outcome: 'applied' });
      expect(stripe.subscriptions.get(u.sub)!.status).toBe('canceled');
      expect(await plansOf(u.id)).toEqual([
        { plan: 0, status: 'canceled' },
        { plan: 3, status: 'active' },
      ]);
    });

    it('two checkouts completed at once leave one subscription', async () => {
      const u = await userWithCheckout(0);
      const monthly = await newPlanCheckout(u, 0);
      const yearly = await newPlanCheckout(u, 1);
      const answers = await Promise.all([deliver(monthly.completed), deliver(yearly.completed)]);
      expect(answers.map((a) => a.statusCode)).toEqual([200, 200]);
      const statuses = (await plansOf(u.id)).map((r) => r.status).sort();
      expect(statuses).toEqual(['active', 'canceled']);
      const atStripe = [monthly.sub, yearly.sub].map((sub) => stripe.subscriptions.get(sub)!.status).sort();
      expect(atStripe).toEqual(['active', 'canceled']);
    });

    it('refuses the plan the subscriber already has, calling Stripe for nothing', async () => {
      const u = await subscriber(4);
      const before = stripe.requests.length;
      const res = await get('/api/pay/service/4', u.cookie);
      expect(res.statusCode).toBe(409);
      expect(res.headers['content-type']).toMatch(/^text\/plain/);
      expect(res.body).toBe('You already have this plan.');
      expect(stripe.requests.length).toBe(before);
    });
  });

  describe('one-time payments', () => {
    it('a paid reset clears today’s usage once', async () => {
      const { id, customer } = await userWithCheckout(5);
      const billing = t.services.billing;
      for (let i = 0; i < 3; i++) await billing.consumeDecrypt(id);
      await expect(billing.consumeDecrypt(id)).rejects.toMatchObject({
        status: 429,
        message: 'Daily limit reached.',
      });
      const reset = checkoutCompleted({
        customer,
        userId: id,
        mode: 'payment',
        metadata: { user_id: id, item: 'reset' },
      });
      expect((await deliver(reset)).json()).toEqual({ received: true, outcome: 'applied' });
      expect(await billing.dailyUsage(id)).toMatchObject({ used: 0, limit: 3, remaining: 3 });
      await billing.consumeDecrypt(id);
      expect((await deliver(reset)).json()).toEqual({ received: true, outcome: 'duplicate' });
      expect(await billing.dailyUsage(id)).toMatchObject({ used: 1, remaining: 2 });
    });

    it('a device payment hands the device to registration (Pending) with one paid year', async () => {
      const id = uid('user');
      const cookie = await signedInUser(t, id);
      await t.services.devices.addDevice({
        userId: id,
        product: 'iPhone15,2',
        udid: '00008110-000A1B2C3D4E5F60',
      });
      const second = await t.services.devices.addDevice({
        userId: id,
        product: 'iPad13,1',
        udid: '00008027-0011223344556677',
      });
      const res = await get('/api/pay/device/1', cookie);
      expect(res.statusCode).toBe(200);
      const form = stripe.requests.at(-1)!.form;
      expect(form).toMatchObject({
        mode: 'payment',
        'line_items[0][price]': 'price_device',
        'metadata[item]': 'device',
        'metadata[device_index]': '1',
        'metadata[device_id]': String(second.id),
      });
      const metadata = { user_id: id, item: 'device', device_index: '1', device_id: String(second.id) };
      const paid = checkoutCompleted({ customer: form.customer!, userId: id, mode: 'payment', metadata });
      expect((await deliver(paid)).json()).toEqual({ received: true, outcome: 'applied' });
      expect((await get('/api/info', cookie)).json()).toMatchObject({
        device_info: [
          { Product: 'iPhone15,2', UDID: '00008110-000A1B2C3D4E5F60', status: 'Add' },
          { Product: 'iPad13,1', UDID: '00008027-0011223344556677', status: 'Pending' },
        ],
      });
      const [row] = await t.database.db.select().from(devices).where(eq(devices.id, second.id));
      expect(row).toMatchObject({ status: 'Pending', paidYears: 1 });
      const again = await get('/api/pay/device/1', cookie);
      expect(again.statusCode).toBe(409);
      expect(again.body).toBe('This device is already being registered.');
    });

    it('a Registered device may renew before it expires', async () => {
      const id = uid('user');
      const cookie = await signedInUser(t, id);
      const expiresAt = new Date(now.getTime() + 200 * DAY_S * 1000);
      await t.services.devices.addDevice({
        userId: id,
        product: 'iPhone14,5',
        udid: 'ABC',
        status: 'Registered',
        expiresAt,
      });
      expect((await get('/api/info', cookie)).json()).toMatchObject({
        device_info: [
          { Product: 'iPhone14,5', UDID: 'ABC', status: 'Registered', expired_date: expiresAt.toISOString() },
        ],
      });
      expect((await get('/api/pay/device/0', cookie)).statusCode).toBe(200);
    });

    it.each(['0', '7', 'x', '-1'])(
      'answers 404 for device index %s the user does not have',
      async (index) => {
        const cookie = await signedInUser(t, uid('user'));
        const res = await get(`/api/pay/device/${index}`, cookie);
        expect(res.statusCode).toBe(404);
        expect(res.body).toBe('This device was not found.');
      },
    );
  });

  describe('webhook verification', () => {
    it('refuses a bad signature with 400 and changes nothing', async () => {
      const { cookie, customer } = await userWithCheckout(0);
      const payload = JSON.stringify(invoicePaid({ sub: uid('sub'), customer, end: nowS() + 30 * DAY_S }));
      const events = await eventCount();
      const forged = signer.webhooks.generateTestHeaderString({ payload, secret: 'whsec_wrong' });
      for (const signature of [forged, '', 't=1,v1=00', 'garbage']) {
        const res = await deliverRaw(payload, signature);
        expect(res.statusCode).toBe(400);
        expect(res.headers['content-type']).toMatch(/^text\/plain/);
        expect(res.body).toBe('Invalid signature.');
      }
      const unsigned = await t.app.inject({
        method: 'POST',
        url: '/api/webhooks/stripe',
        headers: { 'content-type': 'application/json' },
        payload,
      });
      expect(unsigned.statusCode).toBe(400);
      expect(unsigned.body).toBe('Invalid signature.');
      expect(await eventCount()).toBe(events);
      expect(await premiumOf(cookie)).toBe(403);
    });

    it('refuses a body changed after signing', async () => {
      const { customer } = await userWithCheckout(0);
      const payload = JSON.stringify(invoicePaid({ sub: uid('sub'), customer, end: nowS() + 30 * DAY_S }));
      const signature = signer.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET });
      const res = await deliverRaw(payload.replace('"amount_paid":399', '"amount_paid":1'), signature);
      expect(res.statusCode).toBe(400);
    });

    it('acknowledges an unknown event type without applying it', async () => {
      const events = await eventCount();
      const e = stripeFixture('pay_account.updated_event.json');
      const res = await deliver(e);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ received: true, outcome: 'ignored' });
      expect(await eventCount()).toBe(events);
    });

    it('acknowledges malformed but signed events, never crashing', async () => {
      const bodies = [
        { id: 'evt_bad1', type: 'invoice.paid', created: nowS(), data: { object: {} } },
        {
          id: 'evt_bad2',
          type: 'customer.subscription.updated',
          created: nowS(),
          data: { object: { id: 5 } },
        },
        { type: 'checkout.session.completed' },
        [1, 2, 3],
        'just a string',
      ];
      for (const body of bodies) {
        const res = await deliver(body as Json);
        expect(res.statusCode).toBe(200);
        expect(res.json()).toEqual({ received: true, outcome: 'ignored' });
      }
      const payload = 'not json at all';
      const res = await deliverRaw(
        payload,
        signer.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }),
      );
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ received: true, outcome: 'ignored' });
    });

    it('acknowledges an event for a customer it does not know', async () => {
      const res = await deliver(
        invoicePaid({ sub: uid('sub'), customer: 'cus_somebody_else', end: nowS() + DAY_S }),
      );
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ received: true, outcome: 'unmatched' });
    });

    it('is exempt from the cross-site check (Stripe posts from its own servers)', async () => {
      const payload = JSON.stringify({ id: uid('evt'), type: 'ping', created: nowS(), data: { object: {} } });
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/webhooks/stripe',
        headers: {
          'content-type': 'application/json',
          'sec-fetch-site': 'cross-site',
          'stripe-signature': signer.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }),
        },
        payload,
      });
      expect(res.statusCode).toBe(200);
    });
  });

  describe('the real fixture events', () => {
    it('applies each recorded event shape, adapted to our customer and prices', async () => {
      const { id, cookie, customer } = await userWithCheckout(0);
      const sub = uid('sub');
      const end = nowS() + 30 * DAY_S;
      const adapt = (e: Json, f: (o: Json) => void) => {
        e.id = uid('evt');
        e.created = nowS();
        f(e.data.object);
        return e;
      };
      const outcome = async (e: Json) => ((await deliver(e)).json() as { outcome: string }).outcome;

      // checkout.session.completed in subscription mode: pay-rails' fixture is the event's data only.
      const payData = stripeFixture('pay_checkout.session.completed_subscription_mode_data_only.json');
      const payEvent = {
        id: uid('evt'),
        object: 'event',
        type: 'checkout.session.completed',
        created: nowS(),
        data: payData,
      };
      Object.assign(payData.object, {
        customer,
        subscription: sub,
        metadata: { user_id: id, item: 'plan:0' },
      });
      expect(await outcome(payEvent)).toBe('applied');

      const created = adapt(stripeFixture('stripe-ruby-mock_customer.subscription.created.json'), (s) => {
        Object.assign(s, { id: sub, customer, current_period_end: end });
        s.items.data[0].price.id = PLAN_PRICE[0];
      });
      expect(await outcome(created)).toBe('applied');

      const invoice = adapt(stripeFixture('stripe-ruby-mock_invoice.paid.json'), (inv) => {
        Object.assign(inv, { customer, subscription: sub });
        inv.lines.data[0].period.end = end;
        inv.lines.data[0].price.id = PLAN_PRICE[0];
      });
      expect(await outcome(invoice)).toBe('applied');

      const updated = adapt(stripeFixture('stripe-ruby-mock_customer.subscription.updated.json'), (s) => {
        Object.assign(s, { id: sub, customer, current_period_end: end });
        s.items.data[0].price.id = PLAN_PRICE[3];
      });
      expect(await outcome(updated)).toBe('applied');
      expect((await get('/api/info', cookie)).json()).toMatchObject({
        premium: true,
        expired_date: new Date(end * 1000).toISOString(),
        daily_limit: 50,
      });

      // A failed payment and a setup-mode checkout are acknowledged and change nothing.
      const failed = adapt(stripeFixture('stripe-ruby-mock_invoice.payment_failed.json'), (inv) =>
        Object.assign(inv, { customer }),
      );
      expect(await outcome(failed)).toBe('ignored');
      const setup = adapt(stripeFixture('stripe-ruby-mock_checkout.session.completed.setup_mode.json'), (s) =>
        Object.assign(s, { customer, metadata: { user_id: id } }),
      );
      expect(await outcome(setup)).toBe('ignored');
      // invoice.payment_succeeded is not a type we use (invoice.paid is).
      expect(
        await outcome(adapt(stripeFixture('stripe-ruby-mock_invoice.payment_succeeded.json'), () => {})),
      ).toBe('ignored');

      // A one-time checkout from the recorded payment-mode fixture: the reset.
      const reset = adapt(
        stripeFixture('stripe-ruby-mock_checkout.session.completed.payment_mode.json'),
        (s) => Object.assign(s, { customer, metadata: { user_id: id, item: 'reset' } }),
      );
      expect(await outcome(reset)).toBe('applied');
      // The recorded session with no metadata at all sells nothing we know.
      const bare = adapt(stripeFixture('stripe-ruby-mock_checkout.session.completed.json'), (s) =>
        Object.assign(s, { customer }),
      );
      expect(await outcome(bare)).toBe('ignored');

      const deleted = adapt(stripeFixture('stripe-ruby-mock_customer.subscription.deleted.json'), (s) => {
        Object.assign(s, { id: sub, customer });
        s.items.data[0].price.id = PLAN_PRICE[3];
      });
      expect(await outcome(deleted)).toBe('applied');
      expect(await premiumOf(cookie)).toBe(403);
    });

    it('reads the period end from subscription items (API versions from 2025-03-31)', async () => {
      const { cookie, customer } = await userWithCheckout(0);
      const end = nowS() + 30 * DAY_S;
      const e = subscriptionEvent({ sub: uid('sub'), customer, status: 'active', end, plan: 1 });
      delete e.data.object.current_period_end;
      e.data.object.items.data[0].current_period_end = end;
      expect((await deliver(e)).json()).toMatchObject({ outcome: 'applied' });
      expect(await premiumOf(cookie)).toBe(new Date(end * 1000).toISOString());
    });
  });
});
