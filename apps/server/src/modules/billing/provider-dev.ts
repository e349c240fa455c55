import { randomBytes } from 'node:crypto';
import type { Database } from '../../db/client.js';
import type { BillingProvider, CheckoutRequest, PortalRequest } from './provider.js';
import * as q from './queries.js';

export interface DevProviderDeps {
  db: Database;
  clock: () => Date;
  randomId?: () => string;
  /** How long a test checkout stays payable. */
  checkoutTtlMs?: number;
}

export const DEV_CHECKOUT_PATH = '/billing/dev-checkout';
export const DEV_PORTAL_PATH = '/billing/dev-portal';

/**
 * The test-mode provider: checkouts are rows in our database, paid or canceled on a local page.
 * Its Pay builds the same BillingEvent a webhook would and goes through `applyEvent`.
 */
export function createDevProvider({
  db,
  clock,
  randomId,
  checkoutTtlMs = 3_600_000,
}: DevProviderDeps): BillingProvider {
  const newId = randomId ?? (() => randomBytes(18).toString('base64url'));
  return {
    name: 'dev',

    async createCheckout({ user, item, successUrl, cancelUrl }: CheckoutRequest) {
      const id = newId();
      const now = clock();
      await q.insertDevCheckout(db, {
        id,
        userId: user.id,
        item,
        successUrl,
        cancelUrl,
        createdAt: now,
        expiresAt: new Date(now.getTime() + checkoutTtlMs),
      });
      return { url: new URL(`${DEV_CHECKOUT_PATH}/${id}`, successUrl).toString() };
    },

    async createPortal({ returnUrl }: PortalRequest) {
      return { url: new URL(DEV_PORTAL_PATH, returnUrl).toString() };
    },

    // Test-mode subscriptions live only in our database: ending one is marking it canceled there.
    async endSubscription() {},
  };
}
