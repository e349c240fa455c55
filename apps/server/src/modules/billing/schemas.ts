import { z } from 'zod';

/** Plan numbers of docs/product.md, Calls ({n} of GET /api/pay/service/{n}); 5 is the one-time reset. */
export type PlanNumber = 0 | 1 | 3 | 4;

export interface PlanTerms {
  label: string;
  dailyLimit: number;
  interval: 'month' | 'year';
  /** For display and the dev checkout only: what is charged is the configured Stripe price. */
  amountCents: number;
}

/** Prices of docs/product.md, Constants. Labels name the plans wherever a person sees them (checkout, portal, logs). */
export const PLANS: Readonly<Record<PlanNumber, PlanTerms>> = Object.freeze({
  0: { label: 'Decrypt Premium monthly, 20 apps/day', dailyLimit: 20, interval: 'month', amountCents: 399 },
  1: { label: 'Decrypt Premium yearly, 20 apps/day', dailyLimit: 20, interval: 'year', amountCents: 3999 },
  3: { label: 'Decrypt Premium monthly, 50 apps/day', dailyLimit: 50, interval: 'month', amountCents: 699 },
  4: { label: 'Decrypt Premium yearly, 50 apps/day', dailyLimit: 50, interval: 'year', amountCents: 6999 },
});
export const RESET_TERMS = { label: "Reset of today's limit", amountCents: 99 } as const;
export const DEVICE_TERMS = { label: 'Device registration, one year', amountCents: 1999 } as const;

export const isPlanNumber = (n: number): n is PlanNumber => n === 0 || n === 1 || n === 3 || n === 4;

/** What a checkout sells. */
export type Item =
  | { kind: 'plan'; plan: PlanNumber }
  | { kind: 'reset' }
  | { kind: 'device'; index: number; deviceId: number };

/** The item as written into provider metadata: plan:N, reset, device. */
export function itemKey(item: Item): string {
  return item.kind === 'plan' ? `plan:${item.plan}` : item.kind;
}

export function describeItem(item: Item): { label: string; amountCents: number } {
  if (item.kind === 'plan') return PLANS[item.plan];
  if (item.kind === 'reset') return RESET_TERMS;
  return {
    label: `${DEVICE_TERMS.label} (device #${item.index + 1})`,
    amountCents: DEVICE_TERMS.amountCents,
  };
}

/** The plan's name for people; a number we do not sell (an old row) is named as such. */
export const planLabel = (plan: number) =>
  isPlanNumber(plan) ? PLANS[plan].label : `Decrypt Premium (plan ${plan})`;

/** A stored payment item (plan:N, reset, device:ID) named for people. */
export function paymentItemLabel(stored: string): string {
  const plan = /^plan:(\d+)$/.exec(stored);
  if (plan) return planLabel(Number(plan[1]));
  if (stored === 'reset') return RESET_TERMS.label;
  if (stored.startsWith('device:')) return DEVICE_TERMS.label;
  return stored;
}

/** Told to a subscriber buying another plan, on the checkout page. */
export const replacesSentence = (plans: readonly number[]) =>
  `Replaces your current plan, ${plans.map(planLabel).join(' and ')}, which ends when this one is paid.`;

/** Configured Stripe price ids (STRIPE_PRICE_*). */
export interface PriceIds {
  plans: Readonly<Record<PlanNumber, string>>;
  reset: string;
  device: string;
}

export function planOfPrice(prices: PriceIds, priceId: string | undefined): PlanNumber | undefined {
  if (!priceId) return undefined;
  for (const plan of [0, 1, 3, 4] as const) if (prices.plans[plan] === priceId) return plan;
  return undefined;
}

/** Subscription statuses that give premium while the paid period lasts. */
export const ENTITLING_STATUSES = ['active', 'trialing'] as const;

/** Statuses nothing brings back (Stripe's canceled and incomplete_expired). */
export const FINAL_STATUSES = ['canceled', 'incomplete_expired'] as const;

/**
 * Our own status for a subscription that a newer plan replaces while the provider has not yet
 * confirmed its cancellation: no longer entitling, and cancelled again on the next try.
 */
export const REPLACING_STATUS = 'replacing';

/**
 * A provider event reduced to what entitlements need. Both providers produce these; one code path
 * (`applyEvent`) applies them.
 */
export type BillingEvent =
  | {
      kind: 'subscription';
      eventId: string;
      type: string;
      /** The event's own time: orders status observations of one subscription. */
      at: Date;
      subscriptionId: string;
      userId?: string | undefined;
      customerId?: string | undefined;
      plan?: PlanNumber | undefined;
      status: string;
      periodEnd?: Date | undefined;
      /** Set when the event is a payment (invoice.paid, dev Pay): it is recorded in payments. */
      payment?: { amountCents: number | null } | undefined;
      /** A checkout of ours completed (paid): this subscription replaces the user's others. */
      isNewPlan?: boolean | undefined;
      /** The subscription ends with its paid period (Stripe's cancel_at_period_end); undefined: not said. */
      endsAtPeriodEnd?: boolean | undefined;
    }
  | {
      kind: 'purchase';
      eventId: string;
      type: string;
      at: Date;
      userId?: string | undefined;
      customerId?: string | undefined;
      item: { kind: 'reset' } | { kind: 'device'; deviceId: number };
      amountCents: number | null;
    }
  | { kind: 'ignored'; eventId?: string | undefined; type: string; reason: string };

// --- Stripe objects, only the fields read. Unknown fields pass; a missing required one makes the
// event "malformed", which is acknowledged and logged, never applied.

const idOrObject = z.union([z.string(), z.object({ id: z.string() })]).nullish();
export const refId = (v: z.infer<typeof idOrObject>) =>
  v == null ? undefined : typeof v === 'string' ? v : v.id;
const metadata = z.record(z.string(), z.string()).nullish();

export const stripeEvent = z.object({
  id: z.string().min(1),
  type: z.string().min(1),
  created: z.number().int(),
  data: z.object({ object: z.unknown() }),
});

export const stripeCheckoutSession = z.object({
  id: z.string(),
  mode: z.string(),
  payment_status: z.string(),
  client_reference_id: z.string().nullish(),
  customer: idOrObject,
  subscription: idOrObject,
  metadata,
  amount_total: z.number().int().nullish(),
});

export const stripeInvoice = z.object({
  id: z.string(),
  customer: idOrObject,
  amount_paid: z.number().int().nullish(),
  /** Before API version 2025-03-31. */
  subscription: idOrObject,
  /** From API version 2025-03-31 on. */
  parent: z
    .object({
      subscription_details: z.object({ subscription: idOrObject, metadata }).nullish(),
    })
    .nullish(),
  lines: z.object({
    data: z.array(
      z.object({
        period: z.object({ end: z.number().int() }).nullish(),
        price: z.object({ id: z.string() }).nullish(),
        pricing: z.object({ price_details: z.object({ price: idOrObject }).nullish() }).nullish(),
      }),
    ),
  }),
});

export const stripeSubscription = z.object({
  id: z.string(),
  customer: idOrObject,
  status: z.string(),
  metadata,
  /** Before API version 2025-03-31; later versions carry it on each item. */
  current_period_end: z.number().int().nullish(),
  /** Canceled by its customer (the Billing Portal) to end with the period already paid: it will not renew. */
  cancel_at_period_end: z.boolean().nullish(),
  /** A set end (Stripe's newer way of the same, and a subscription set to end on a date). */
  cancel_at: z.number().int().nullish(),
  items: z.object({
    data: z.array(
      z.object({
        current_period_end: z.number().int().nullish(),
        price: z.object({ id: z.string() }).nullish(),
      }),
    ),
  }),
});

/** An Item as stored in dev_checkouts.item. */
export const storedItem = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('plan'),
    plan: z.union([z.literal(0), z.literal(1), z.literal(3), z.literal(4)]),
  }),
  z.object({ kind: z.literal('reset') }),
  z.object({
    kind: z.literal('device'),
    index: z.number().int().min(0),
    deviceId: z.number().int().positive(),
  }),
]);
