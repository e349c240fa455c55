import type { Database } from '../../db/client.js';
import { fail, notFound } from '../../platform/errors.js';
import type { AuthService } from '../auth/service.js';
import type { DeviceService } from '../devices/service.js';
import type { BillingProvider } from './provider.js';
import * as q from './queries.js';
import {
  ENTITLING_STATUSES,
  FINAL_STATUSES,
  isPlanNumber,
  PLANS,
  REPLACING_STATUS,
  type BillingEvent,
  type Item,
  type PlanNumber,
} from './schemas.js';

export interface BillingServiceDeps {
  db: Database;
  clock: () => Date;
  provider: BillingProvider;
  devices: Pick<DeviceService, 'findDeviceByIndex' | 'recordRegistrationPayment'>;
  users: Pick<AuthService, 'findUser'>;
  /**
   * With a pool of developer accounts: why no account can take a device, asked before its
   * checkout (modules/identity/pool/account-pool.ts); undefined when one can.
   */
  slots?: { paymentRefusal(userId: string, deviceId: number): Promise<string | undefined> } | undefined;
  freeDailyLimit: number;
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
}

export interface Entitlement {
  premium: boolean;
  /** End of the latest paid period of an active subscription; null when not premium. */
  premiumUntil: Date | null;
  dailyLimit: number;
  /** The plan that gives the limit (the latest ending of the best); null when not premium. */
  plan: PlanNumber | null;
}

export type ApplyOutcome = 'applied' | 'duplicate' | 'ignored' | 'unmatched';

/** What GET /api/pay/service/{n} and /api/pay/device/{index} ask for, before the device is looked up. */
export type CheckoutAsk =
  { kind: 'plan'; plan: PlanNumber } | { kind: 'reset' } | { kind: 'device'; index: number };

export const utcDay = (d: Date) => d.toISOString().slice(0, 10);

/**
 * The daily decrypt count a request spent, given back when the request did no work of its own: it
 * turned out to be a version another request had decrypted (docs/architecture.md, Data). Made
 * with the core services, which the billing service comes after.
 */
export function createDecryptUsage({ db }: { db: Database }) {
  return {
    /** One use back on the UTC day the request was made, in the caller's transaction. */
    async giveBack(userId: string, requestedAt: Date, tx: Database = db) {
      await q.decrementUsage(tx, userId, utcDay(requestedAt));
    },
  };
}

export type DecryptUsage = ReturnType<typeof createDecryptUsage>;

// Canceled and incomplete_expired are final in Stripe: nothing brings such a subscription back.
const STATUS_RANK: Record<string, number> = {
  canceled: 9,
  incomplete_expired: 8,
  active: 6,
  trialing: 5,
  past_due: 4,
  unpaid: 3,
  paused: 2,
  incomplete: 1,
};
const isFinal = (status: string) => (FINAL_STATUSES as readonly string[]).includes(status);

export interface SubscriptionState {
  plan: number;
  status: string;
  statusAt: Date;
  currentPeriodEnd: Date | null;
}

/**
 * Folds one observation into a subscription's state so that the result does not depend on the
 * order of delivery: the period end only grows; status and plan come from the greatest observation
 * by (final, event time, status rank, plan).
 */
export function mergeSubscription(
  current: SubscriptionState | undefined,
  obs: { plan?: number | undefined; status: string; at: Date; periodEnd?: Date | undefined },
  fallbackPlan: number,
): SubscriptionState {
  if (!current) {
    return {
      plan: obs.plan ?? fallbackPlan,
      status: obs.status,
      statusAt: obs.at,
      currentPeriodEnd: obs.periodEnd ?? null,
    };
  }
  const ends = [current.currentPeriodEnd, obs.periodEnd ?? null].filter((d): d is Date => d !== null);
  const currentPeriodEnd = ends.length ? new Date(Math.max(...ends.map((d) => d.getTime()))) : null;
  // The plan breaks exact ties (two observations in the same second), so the order never matters.
  const key = (status: string, at: Date, plan: number) => [
    isFinal(status) ? 1 : 0,
    at.getTime(),
    STATUS_RANK[status] ?? 0,
    plan,
  ];
  const a = key(obs.status, obs.at, obs.plan ?? current.plan);
  const b = key(current.status, current.statusAt, current.plan);
  const differs = a.findIndex((v, i) => v !== b[i]);
  const isNewer = differs !== -1 && a[differs]! > b[differs]!;
  if (!isNewer) return { ...current, currentPeriodEnd };
  return { plan: obs.plan ?? current.plan, status: obs.status, statusAt: obs.at, currentPeriodEnd };
}

export function createBillingService(deps: BillingServiceDeps) {
  const { db, clock, provider, devices, users, freeDailyLimit, log } = deps;

  /** `namedUser`: the event's own user id, checked beforehand (outside the transaction). */
  async function resolveUser(
    tx: Database,
    event: Extract<BillingEvent, { userId?: string | undefined }>,
    namedUser: string | undefined,
  ) {
    if (event.customerId) {
      const owner = await q.findUserOfCustomer(tx, event.customerId);
      if (owner) return owner;
    }
    if (namedUser) return namedUser;
    if (event.kind === 'subscription') return (await q.findSubscription(tx, event.subscriptionId))?.userId;
    return undefined;
  }

  /**
   * The event id is claimed in the same transaction as the change, so a replayed or concurrent
   * delivery changes nothing. Returns the user it was for (a duplicate's too).
   */
  async function applyOnce(
    event: Exclude<BillingEvent, { kind: 'ignored' }>,
    providerName: string,
  ): Promise<{ outcome: ApplyOutcome; userId?: string }> {
    // Looked up before the transaction: embedded PGlite has one connection, which the transaction holds.
    const namedUser = event.userId ? (await users.findUser(event.userId))?.id : undefined;
    return db.transaction(async (tx) => {
      const userId = await resolveUser(tx, event, namedUser);
      const existing =
        event.kind === 'subscription' ? await q.findSubscription(tx, event.subscriptionId) : undefined;
      const plan = event.kind === 'subscription' ? (event.plan ?? existing?.plan) : undefined;
      if (!userId || (event.kind === 'subscription' && plan === undefined)) {
        log.warn(
          { eventId: event.eventId, type: event.type, reason: userId ? 'unknown plan' : 'unknown user' },
          'billing event acknowledged, not applied',
        );
        return { outcome: 'unmatched' };
      }
      const now = clock();
      if (
        !(await q.claimEvent(tx, {
          eventId: event.eventId,
          provider: providerName,
          type: event.type,
          userId,
          receivedAt: now,
        }))
      ) {
        return { outcome: 'duplicate', userId };
      }
      if (event.kind === 'subscription') {
        const obs = { plan: event.plan, status: event.status, at: event.at, periodEnd: event.periodEnd };
        await q.insertSubscription(tx, {
          subscriptionId: event.subscriptionId,
          provider: providerName,
          userId,
          ...mergeSubscription(undefined, obs, plan!),
          updatedAt: now,
        });
        const locked = await q.lockSubscription(tx, event.subscriptionId);
        const merged = locked ? mergeSubscription(locked, obs, plan!) : undefined;
        // Whether it renews is said by the newest observation that says it (the one whose status was kept).
        const ends =
          event.endsAtPeriodEnd !== undefined && merged?.statusAt.getTime() === event.at.getTime()
            ? { endsAtPeriodEnd: event.endsAtPeriodEnd }
            : {};
        if (merged)
          await q.updateSubscription(tx, event.subscriptionId, { ...merged, ...ends, updatedAt: now });
        if (event.payment) {
          await q.insertPayment(tx, {
            userId,
            provider: providerName,
            eventId: event.eventId,
            item: `plan:${event.plan ?? plan}`,
            amountCents: event.payment.amountCents,
            paidAt: event.at,
          });
        }
      } else {
        if (event.item.kind === 'reset') {
          await q.clearUsage(tx, userId, utcDay(now));
        } else if (!(await devices.recordRegistrationPayment(userId, event.item.deviceId, tx))) {
          log.warn(
            { eventId: event.eventId, deviceId: event.item.deviceId },
            'device payment for a device the user no longer has',
          );
        }
        await q.insertPayment(tx, {
          userId,
          provider: providerName,
          eventId: event.eventId,
          item: event.item.kind === 'reset' ? 'reset' : `device:${event.item.deviceId}`,
          amountCents: event.amountCents,
          paidAt: event.at,
        });
      }
      log.info({ eventId: event.eventId, type: event.type, userId }, 'billing event applied');
      return { outcome: 'applied', userId };
    });
  }

  /**
   * A user has one plan at a time: the subscription of a paid checkout of ours replaces the user's
   * others. They end at once, and with Stripe the unused part of their paid period comes back as a
   * credit on the customer's balance (the provider's endSubscription), which Stripe spends on the
   * next invoices. Chosen over the Billing Portal's plan-change flow because it needs no portal
   * configuration in the Stripe dashboard and also settles two checkouts paid in two tabs.
   *
   * First, in one transaction over the user's locked rows, the others are marked `replacing` (no
   * longer entitling) unless this subscription was itself replaced by a concurrent payment; then
   * each is ended at the provider and marked canceled. A provider failure throws (the webhook
   * answers 503); the provider's redelivery of the same event ends the rows still `replacing`.
   */
  async function replaceOtherPlans(userId: string, keptId: string) {
    const now = clock();
    const ending = await db.transaction(async (tx) => {
      const rows = await q.lockSubscriptionsOf(tx, userId);
      const kept = rows.find((r) => r.subscriptionId === keptId);
      if (!kept || kept.status === REPLACING_STATUS || isFinal(kept.status)) return [];
      const others = rows.filter((r) => r.subscriptionId !== keptId && !isFinal(r.status));
      for (const r of others) {
        const statusAt = new Date(Math.max(now.getTime(), r.statusAt.getTime()));
        await q.setSubscriptionStatus(tx, r.subscriptionId, {
          status: REPLACING_STATUS,
          statusAt,
          updatedAt: now,
        });
      }
      return others;
    });
    for (const old of ending) {
      // A row of another provider (test mode before Stripe was configured) has nothing to end there.
      if (old.provider === provider.name) await provider.endSubscription(old.subscriptionId);
      const statusAt = new Date(Math.max(clock().getTime(), old.statusAt.getTime()));
      await q.setSubscriptionStatus(db, old.subscriptionId, {
        status: 'canceled',
        statusAt,
        updatedAt: clock(),
      });
      log.info(
        { userId, subscriptionId: old.subscriptionId, plan: old.plan, replacedBy: keptId },
        'subscription replaced by a new plan',
      );
    }
  }

  /** The one entitlement code path for webhooks and the dev checkout. */
  async function applyEvent(
    event: BillingEvent,
    providerName: string = provider.name,
  ): Promise<ApplyOutcome> {
    if (event.kind === 'ignored') {
      log.info(
        { eventId: event.eventId, type: event.type, reason: event.reason },
        'billing event acknowledged, not applied',
      );
      return 'ignored';
    }
    const { outcome, userId } = await applyOnce(event, providerName);
    // On a duplicate too: the redelivery of an event whose replacement failed half-way finishes it.
    if (userId && event.kind === 'subscription' && event.isNewPlan)
      await replaceOtherPlans(userId, event.subscriptionId);
    return outcome;
  }

  /** The plans a checkout for `plan` would replace; 409 when the user already has that very plan. */
  async function plansReplacedBy(userId: string, plan: PlanNumber): Promise<number[]> {
    const live = await q.liveSubscriptionsOf(db, userId);
    const entitling: readonly string[] = ENTITLING_STATUSES;
    if (live.some((s) => s.plan === plan && entitling.includes(s.status))) throw fail('SAME_PLAN');
    return live.map((s) => s.plan);
  }

  /** `tx`: read inside the caller's transaction (PGlite has one connection: a read outside would wait on it). */
  async function entitlement(userId: string, tx: Database = db): Promise<Entitlement> {
    const rows = await q.entitlingSubscriptions(tx, userId, clock());
    if (rows.length === 0)
      return { premium: false, premiumUntil: null, dailyLimit: freeDailyLimit, plan: null };
    const until = Math.max(...rows.map((r) => r.currentPeriodEnd!.getTime()));
    const limitOf = (r: (typeof rows)[number]) => PLANS[r.plan as PlanNumber]?.dailyLimit ?? freeDailyLimit;
    const dailyLimit = Math.max(...rows.map(limitOf));
    // One plan at a time, normally; while a replaced one ends, the one giving the limit is shown.
    const best = rows
      .filter((r) => limitOf(r) === dailyLimit)
      .sort((a, b) => b.currentPeriodEnd!.getTime() - a.currentPeriodEnd!.getTime())[0]!;
    return {
      premium: true,
      premiumUntil: new Date(until),
      dailyLimit,
      plan: isPlanNumber(best.plan) ? best.plan : null,
    };
  }

  async function resolveItem(userId: string, ask: CheckoutAsk): Promise<Item> {
    if (ask.kind !== 'device') return ask;
    const device = await devices.findDeviceByIndex(userId, ask.index);
    if (!device) throw notFound('This device');
    if (device.status === 'Pending' || device.status === 'Process') throw fail('DEVICE_BEING_REGISTERED');
    // Before the checkout, not after: a device no developer account can take is not paid for.
    const refusal = await deps.slots?.paymentRefusal(userId, device.id);
    if (refusal) throw fail('NO_FREE_SLOT', refusal);
    return { kind: 'device', index: ask.index, deviceId: device.id };
  }

  return {
    applyEvent,
    entitlement,

    /** A checkout URL for the user (GET /api/pay/...). `baseUrl` is the site's origin. */
    async startCheckout(user: { id: string }, ask: CheckoutAsk, baseUrl: string) {
      const item = await resolveItem(user.id, ask);
      const replaces = item.kind === 'plan' ? await plansReplacedBy(user.id, item.plan) : [];
      // A device payment returns to the Device tab, where its status follows.
      const tab = item.kind === 'device' ? '&tab=device' : '';
      return provider.createCheckout({
        user,
        item,
        replaces,
        successUrl: `${baseUrl}/my?checkout=success${tab}`,
        cancelUrl: `${baseUrl}/my?checkout=canceled${tab}`,
      });
    },

    async openPortal(user: { id: string }, baseUrl: string) {
      return provider.createPortal({ user, returnUrl: `${baseUrl}/my` });
    },

    /** Verifies and applies a webhook delivery; 400 'Invalid signature.' changes nothing. */
    async handleWebhook(rawBody: Buffer, headers: Record<string, string | string[] | undefined>) {
      if (!provider.parseWebhook) throw notFound('This webhook');
      return applyEvent(provider.parseWebhook(rawBody, headers));
    },

    /** Today's (UTC) decrypt usage against the limit. */
    async dailyUsage(userId: string) {
      const day = utcDay(clock());
      const [used, { dailyLimit }] = await Promise.all([q.usageOn(db, userId, day), entitlement(userId)]);
      return { day, used, limit: dailyLimit, remaining: Math.max(0, dailyLimit - used) };
    },

    /**
     * Counts one decrypt for today; 429 'Daily limit reached.' when the limit is used up. Runs in
     * the caller's transaction (`tx`), so a request that fails later gives its count back.
     */
    async consumeDecrypt(userId: string, tx: Database = db) {
      const { dailyLimit } = await entitlement(userId, tx);
      const used = await q.incrementUsage(tx, userId, utcDay(clock()), dailyLimit);
      if (used === undefined) throw fail('DAILY_LIMIT');
      return { used, limit: dailyLimit };
    },

    async paymentHistory(userId: string) {
      const [payments, subs] = await Promise.all([q.paymentsOf(db, userId), q.subscriptionsOf(db, userId)]);
      return { payments, subscriptions: subs };
    },
  };
}

export type BillingService = ReturnType<typeof createBillingService>;
