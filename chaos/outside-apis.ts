/**
 * App Store Connect and Stripe in the dependencies scenario: the local doubles the server's tests
 * use (apps/server/src/test/asc-server.ts, stripe-server.ts), run in the chaos run's own process,
 * so devices are registered on a (stand-in) Apple account, signs carry its certificate, and
 * payments go through Stripe's checkout and a signed webhook, as in production.
 *
 * Their outage (a Part for chaos/disruptions.ts) is both answering 429 with Retry-After for the
 * first half of it (Apple's rate limit of the key, Stripe's) and 5xx for the second; users who
 * enroll and pay meanwhile read the checkout's 503 sentence and retry, and Stripe's webhook for
 * their payment arrives late, once Stripe is back.
 */
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import Stripe from 'stripe';
import { startAscServer, type AscServer } from '../apps/server/src/test/asc-server.js';
import {
  startStripeServer,
  STRIPE_TEST_PRICES,
  type StripeServer,
} from '../apps/server/src/test/stripe-server.js';
import type { Part } from './disruptions.js';
import type { Site } from './site.js';

const KEY_ID = 'CHAOSKEY01';
const ISSUER_ID = '69a6de70-0000-47e3-e053-5b8c7c11a4d1';
const STRIPE_KEY = 'sk_test_chaos';
const WEBHOOK_SECRET = 'whsec_test_chaos';
/** What each part asks in its 429 (and Apple in its 5xx): short, so the run measures the return. */
const RETRY_AFTER_S = 10;

export interface OutsideApis {
  asc: AscServer;
  stripe: StripeServer;
  /** The server processes' settings for both. */
  env: Record<string, string>;
  /**
   * Both answering 429 with Retry-After, then 5xx, for `downMs`; `before` is awaited just before
   * it begins, `during` is called as it begins.
   */
  part(downMs: number, users: { before: () => Promise<void>; during: () => void }): Part;
  /** Completes a device checkout the way Stripe does: its webhook, signed, delivered until answered 200. */
  pay(site: Site, userId: string): Promise<void>;
  /**
   * Each user's device paid once (one payment row) and registered once at Apple (one device of
   * its UDID on the account): what is missing, and what is there twice.
   */
  account(
    db: pg.Pool,
    users: ReadonlyArray<{ id: string; udid: string }>,
  ): Promise<{ lost: string[]; duplicated: string[] }>;
  close(): Promise<void>;
}

export async function startOutsideApis(root: string): Promise<OutsideApis> {
  const keyPem = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();
  const asc = await startAscServer({ keyId: KEY_ID, issuerId: ISSUER_ID, keyPem });
  const stripe = await startStripeServer({ secretKey: STRIPE_KEY });
  const signer = new Stripe(STRIPE_KEY);
  const completed = readFileSync(
    path.join(root, 'fixtures/stripe/stripe-ruby-mock_checkout.session.completed.json'),
    'utf8',
  );
  let events = 0;
  let timer: NodeJS.Timeout | undefined;

  return {
    asc,
    stripe,
    env: {
      ASC_KEY_ID: KEY_ID,
      ASC_ISSUER_ID: ISSUER_ID,
      ASC_PRIVATE_KEY: keyPem.replace(/\n/g, '\\n'),
      ASC_BASE_URL: asc.url,
      STRIPE_SECRET_KEY: STRIPE_KEY,
      STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
      STRIPE_API_URL: stripe.url,
      ...STRIPE_TEST_PRICES,
    },

    part(downMs, users) {
      return {
        async stop() {
          await users.before();
          asc.failAll('THROTTLED', { retryAfterS: RETRY_AFTER_S });
          stripe.failAll({
            status: 429,
            type: 'rate_limit_error',
            message: 'Too many requests made to the API too quickly.',
            retryAfterS: RETRY_AFTER_S,
          });
          timer = setTimeout(() => {
            asc.failAll('UNAVAILABLE');
            stripe.failAll({ status: 500, type: 'api_error', message: 'An unknown error occurred.' });
          }, downMs / 2);
          users.during();
        },
        async start() {
          clearTimeout(timer);
          asc.failAll(undefined);
          stripe.failAll(undefined);
        },
      };
    },

    async pay(site, userId) {
      const session = stripe.requests.findLast(
        (r) => r.path === '/v1/checkout/sessions' && r.form['metadata[user_id]'] === userId,
      );
      if (!session) throw new Error(`no checkout session was opened for ${userId}`);
      const event = JSON.parse(completed) as {
        id: string;
        created: number;
        data: { object: Record<string, unknown> };
      };
      event.id = `evt_chaos_${++events}`;
      event.created = Math.floor(Date.now() / 1000);
      Object.assign(event.data.object, {
        id: `cs_chaos_${events}`,
        customer: session.form.customer,
        client_reference_id: userId,
        mode: 'payment',
        metadata: {
          user_id: userId,
          item: 'device',
          device_index: session.form['metadata[device_index]'],
          device_id: session.form['metadata[device_id]'],
        },
        subscription: null,
        payment_status: 'paid',
        amount_total: 99,
      });
      const payload = JSON.stringify(event);
      const res = await site.call('/api/webhooks/stripe', {
        method: 'POST',
        body: new Uint8Array(Buffer.from(payload)),
        contentType: 'application/json; charset=utf-8',
        headers: {
          'stripe-signature': signer.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }),
        },
      });
      if (res.status !== 200) throw new Error(`the webhook for ${userId}: ${res.status} ${await res.text()}`);
    },

    async account(db, users) {
      const { rows } = await db.query<{ user_id: string; n: number }>(
        `select user_id, count(*)::int as n from payments where user_id = any($1) group by user_id`,
        [users.map((u) => u.id)],
      );
      const lost: string[] = [];
      const twice: string[] = [];
      for (const user of users) {
        const paid = rows.find((r) => r.user_id === user.id)?.n ?? 0;
        if (paid === 0) lost.push(`${user.id}'s payment was not recorded`);
        if (paid > 1) twice.push(`${user.id}'s payment recorded ${paid} times`);
        const atApple = asc.devices.filter((d) => d.udid === user.udid).length;
        if (atApple === 0) lost.push(`${user.id}'s device is not registered at Apple`);
        if (atApple > 1) twice.push(`${user.id}'s device registered ${atApple} times at Apple`);
      }
      return { lost, duplicated: twice };
    },

    async close() {
      clearTimeout(timer);
      await asc.close();
      await stripe.close();
    },
  };
}
