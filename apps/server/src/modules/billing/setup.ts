import type { Database } from '../../db/client.js';
import type { Config } from '../../platform/config.js';
import { createDevProvider } from './provider-dev.js';
import type { BillingProvider } from './provider.js';
import * as q from './queries.js';

type BillingConfig = Pick<
  Config,
  | 'STRIPE_SECRET_KEY'
  | 'STRIPE_WEBHOOK_SECRET'
  | 'STRIPE_API_URL'
  | 'STRIPE_PRICE_MONTHLY_20'
  | 'STRIPE_PRICE_YEARLY_20'
  | 'STRIPE_PRICE_MONTHLY_50'
  | 'STRIPE_PRICE_YEARLY_50'
  | 'STRIPE_PRICE_RESET'
  | 'STRIPE_PRICE_DEVICE'
  | 'STRIPE_TIMEOUT_MS'
>;

/**
 * Stripe when STRIPE_SECRET_KEY is set (loadConfig has checked the rest is there), else the dev
 * provider. Stripe's client is loaded only then: a third of a second of CPU at every start otherwise.
 */
export async function createBillingProvider(
  config: BillingConfig,
  deps: { db: Database; clock: () => Date; log: { warn(obj: object, msg: string): void } },
): Promise<BillingProvider> {
  const { db } = deps;
  if (!config.STRIPE_SECRET_KEY) return createDevProvider({ db, clock: deps.clock });
  const need = (value: string | undefined, name: string) => {
    if (!value) throw new Error(`${name} is required when STRIPE_SECRET_KEY is set`);
    return value;
  };
  const { createStripeProvider } = await import('./provider-stripe.js');
  return createStripeProvider({
    secretKey: config.STRIPE_SECRET_KEY,
    webhookSecret: need(config.STRIPE_WEBHOOK_SECRET, 'STRIPE_WEBHOOK_SECRET'),
    apiUrl: config.STRIPE_API_URL,
    timeoutMs: config.STRIPE_TIMEOUT_MS,
    prices: {
      plans: {
        0: need(config.STRIPE_PRICE_MONTHLY_20, 'STRIPE_PRICE_MONTHLY_20'),
        1: need(config.STRIPE_PRICE_YEARLY_20, 'STRIPE_PRICE_YEARLY_20'),
        3: need(config.STRIPE_PRICE_MONTHLY_50, 'STRIPE_PRICE_MONTHLY_50'),
        4: need(config.STRIPE_PRICE_YEARLY_50, 'STRIPE_PRICE_YEARLY_50'),
      },
      reset: need(config.STRIPE_PRICE_RESET, 'STRIPE_PRICE_RESET'),
      device: need(config.STRIPE_PRICE_DEVICE, 'STRIPE_PRICE_DEVICE'),
    },
    customers: {
      findCustomerId: (userId) => q.findCustomerId(db, userId),
      async saveCustomerId(userId, customerId) {
        await q.insertCustomer(db, { userId, provider: 'stripe', customerId });
        return (await q.findCustomerId(db, userId)) ?? customerId;
      },
    },
    log: deps.log,
  });
}
