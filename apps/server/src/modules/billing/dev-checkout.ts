import type { Database } from '../../db/client.js';
import { fail, notFound } from '../../platform/errors.js';
import * as q from './queries.js';
import { PLANS, describeItem, storedItem, type BillingEvent, type Item } from './schemas.js';
import type { BillingService } from './service.js';

/**
 * The test-mode checkout (the dev provider, provider-dev.ts): a checkout is a row of ours, shown
 * on a local page (dev-pages.ts), paid or canceled there. Its Pay builds the BillingEvent a
 * webhook would and goes through the billing service's `applyEvent`, the one entitlement path.
 */

export interface DevCheckoutDeps {
  db: Database;
  clock: () => Date;
  billing: Pick<BillingService, 'applyEvent'>;
}

/** Adds calendar months in UTC; the 31st plus one month is the last day of the shorter month. */
export function addMonthsUtc(d: Date, months: number): Date {
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth() + months;
  const lastDay = new Date(Date.UTC(y, m + 1, 0)).getUTCDate();
  return new Date(
    Date.UTC(
      y,
      m,
      Math.min(d.getUTCDate(), lastDay),
      d.getUTCHours(),
      d.getUTCMinutes(),
      d.getUTCSeconds(),
      d.getUTCMilliseconds(),
    ),
  );
}

const checkoutGone = () => fail('CHECKOUT_GONE');

export function createDevCheckout({ db, clock, billing }: DevCheckoutDeps) {
  const { applyEvent } = billing;

  async function ownCheckout(id: string, userId: string) {
    const row = await q.findDevCheckout(db, id);
    if (!row || row.userId !== userId) throw notFound('This checkout');
    const parsed = storedItem.safeParse(row.item);
    if (!parsed.success) throw notFound('This checkout');
    const isOpen = row.outcome === null && row.expiresAt.getTime() > clock().getTime();
    return { row, item: parsed.data as Item, isOpen };
  }

  function devEvent(id: string, userId: string, item: Item, now: Date): BillingEvent {
    const eventId = `dev_evt_${id}`;
    const type = 'dev.checkout.paid';
    const { amountCents } = describeItem(item);
    if (item.kind === 'plan') {
      const periodEnd = PLANS[item.plan].interval === 'month' ? addMonthsUtc(now, 1) : addMonthsUtc(now, 12);
      return {
        kind: 'subscription',
        eventId,
        type,
        at: now,
        subscriptionId: `dev_sub_${id}`,
        userId,
        plan: item.plan,
        status: 'active',
        periodEnd,
        payment: { amountCents },
        isNewPlan: true,
      };
    }
    const purchase =
      item.kind === 'reset'
        ? { kind: 'reset' as const }
        : { kind: 'device' as const, deviceId: item.deviceId };
    return { kind: 'purchase', eventId, type, at: now, userId, item: purchase, amountCents };
  }

  return {
    /** What the checkout page shows (dev-pages.ts): the item, and while it is open the plans it replaces. */
    async view(id: string, userId: string) {
      const { row, item, isOpen } = await ownCheckout(id, userId);
      const live = isOpen && item.kind === 'plan' ? await q.liveSubscriptionsOf(db, userId) : [];
      return {
        id: row.id,
        item,
        ...describeItem(item),
        replaces: live.map((s) => s.plan),
        outcome: row.outcome,
        isOpen,
        cancelUrl: row.cancelUrl,
        successUrl: row.successUrl,
      };
    },

    /** Pay on the dev checkout page: the same applyEvent as a webhook. Returns where to go next. */
    async pay(id: string, userId: string): Promise<string> {
      const { row, item, isOpen } = await ownCheckout(id, userId);
      if (row.outcome === 'paid') return row.successUrl;
      if (!isOpen) throw checkoutGone();
      // Applied first, then marked paid: a double click applies once (same event id).
      await applyEvent(devEvent(id, userId, item, clock()), 'dev');
      await q.decideDevCheckout(db, id, 'paid');
      return row.successUrl;
    },

    /** Cancel on the dev checkout page: nothing is applied. Returns where to go next. */
    async cancel(id: string, userId: string): Promise<string> {
      const { row } = await ownCheckout(id, userId);
      await q.decideDevCheckout(db, id, 'canceled');
      return row.cancelUrl;
    },
  };
}

export type DevCheckout = ReturnType<typeof createDevCheckout>;
