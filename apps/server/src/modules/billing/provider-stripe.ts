import Stripe from 'stripe';
import { AppError, fail, failWith } from '../../platform/errors.js';
import type { BillingProvider, CheckoutRequest, CustomerStore, PortalRequest } from './provider.js';
import {
  isPlanNumber,
  itemKey,
  planOfPrice,
  refId,
  replacesSentence,
  stripeCheckoutSession,
  stripeEvent,
  stripeInvoice,
  stripeSubscription,
  type BillingEvent,
  type PriceIds,
} from './schemas.js';

export interface StripeProviderDeps {
  secretKey: string;
  webhookSecret: string;
  /** A local server speaking Stripe's wire format (tests, staging); Stripe itself when unset. */
  apiUrl?: string | undefined;
  /** Longest wait for one answer (STRIPE_TIMEOUT_MS); 20 s, the client's own default is 80 s. */
  timeoutMs?: number | undefined;
  prices: PriceIds;
  customers: CustomerStore;
  log: { warn(obj: object, msg: string): void };
}

export const invalidSignature = () => fail('INVALID_SIGNATURE');
const paymentsUnavailable = (cause: unknown) => failWith('PAYMENTS_UNAVAILABLE', { cause });

/** Options that point the official client at `apiUrl` (host, port and protocol are all it takes). */
export function stripeClientOptions(apiUrl: string | undefined, timeoutMs = 20_000): Stripe.StripeConfig {
  const base: Stripe.StripeConfig = { maxNetworkRetries: 2, timeout: timeoutMs };
  if (!apiUrl) return base;
  const url = new URL(apiUrl);
  const protocol = url.protocol === 'http:' ? 'http' : 'https';
  return { ...base, host: url.hostname, port: url.port || (protocol === 'http' ? 80 : 443), protocol };
}

export function createStripeProvider(deps: StripeProviderDeps): BillingProvider {
  const { prices, customers, log } = deps;
  const stripe = new Stripe(deps.secretKey, stripeClientOptions(deps.apiUrl, deps.timeoutMs));

  async function ensureCustomer(userId: string): Promise<string> {
    const known = await customers.findCustomerId(userId);
    if (known) return known;
    // The idempotency key makes two first checkouts at once create one Stripe customer.
    const customer = await stripe.customers.create(
      { metadata: { user_id: userId }, description: `Sideport user ${userId}` },
      { idempotencyKey: `sideport-customer-${userId}` },
    );
    return customers.saveCustomerId(userId, customer.id);
  }

  async function call<T>(what: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (err) {
      if (err instanceof AppError) throw err;
      const e = err as { type?: string; code?: string; statusCode?: number; message?: string };
      log.warn(
        { stripe: { type: e.type, code: e.code, status: e.statusCode, message: e.message } },
        `Stripe ${what} failed`,
      );
      throw paymentsUnavailable(err);
    }
  }

  return {
    name: 'stripe',

    async createCheckout({ user, item, successUrl, cancelUrl, replaces }: CheckoutRequest) {
      return call('checkout', async () => {
        const customer = await ensureCustomer(user.id);
        const meta: Record<string, string> = { user_id: user.id, item: itemKey(item) };
        if (item.kind === 'device')
          Object.assign(meta, { device_index: String(item.index), device_id: String(item.deviceId) });
        const price =
          item.kind === 'plan'
            ? prices.plans[item.plan]
            : item.kind === 'reset'
              ? prices.reset
              : prices.device;
        const params: Stripe.Checkout.SessionCreateParams = {
          mode: item.kind === 'plan' ? 'subscription' : 'payment',
          customer,
          client_reference_id: user.id,
          line_items: [{ price, quantity: 1 }],
          success_url: successUrl,
          cancel_url: cancelUrl,
          metadata: meta,
          // Copied onto the subscription, so its own events name the user and plan too.
          ...(item.kind === 'plan'
            ? { subscription_data: { metadata: meta } }
            : { payment_intent_data: { metadata: meta } }),
          // Shown above the pay button: a subscriber changing plan sees that the old one ends.
          ...(replaces.length > 0 && {
            custom_text: {
              submit: {
                message: `${replacesSentence(replaces)} Its unused time is credited to your account.`,
              },
            },
          }),
        };
        const session = await stripe.checkout.sessions.create(params);
        if (!session.url) throw paymentsUnavailable(new Error(`checkout session ${session.id} has no url`));
        return { url: session.url };
      });
    },

    async createPortal({ user, returnUrl }: PortalRequest) {
      return call('billing portal', async () => {
        const customer = await ensureCustomer(user.id);
        const session = await stripe.billingPortal.sessions.create({ customer, return_url: returnUrl });
        return { url: session.url };
      });
    },

    async endSubscription(subscriptionId: string) {
      await call('subscription cancel', async () => {
        try {
          // prorate: the unused part of the paid period becomes a credit; invoice_now puts it on a
          // final invoice at once, so it lands on the customer's balance for the next invoices.
          await stripe.subscriptions.cancel(subscriptionId, {
            prorate: true,
            invoice_now: true,
            cancellation_details: { comment: 'Replaced by a new plan.' },
          });
        } catch (err) {
          // Stripe answers a subscription that has already been canceled as missing: it has ended.
          if (err instanceof Stripe.errors.StripeInvalidRequestError && err.code === 'resource_missing')
            return;
          throw err;
        }
      });
    },

    parseWebhook(rawBody: Buffer, headers: Record<string, string | string[] | undefined>): BillingEvent {
      const signature = headers['stripe-signature'];
      if (typeof signature !== 'string' || signature === '') throw invalidSignature();
      let event: unknown;
      try {
        // Checks the HMAC and the timestamp tolerance (300 s), then parses the JSON.
        event = stripe.webhooks.constructEvent(rawBody, signature, deps.webhookSecret);
      } catch (err) {
        if (err instanceof Stripe.errors.StripeSignatureVerificationError) throw invalidSignature();
        // Signed but not JSON: acknowledge, never apply.
        return { kind: 'ignored', type: 'unknown', reason: 'the signed body is not a JSON event' };
      }
      return toBillingEvent(event, prices);
    },
  };
}

const seconds = (s: number) => new Date(s * 1000);

/** Maps a verified Stripe event to a BillingEvent; anything unusable becomes `ignored` with a reason. */
export function toBillingEvent(raw: unknown, prices: PriceIds): BillingEvent {
  const parsed = stripeEvent.safeParse(raw);
  if (!parsed.success) return { kind: 'ignored', type: 'unknown', reason: 'not a Stripe event' };
  const { id: eventId, type, created } = parsed.data;
  const at = seconds(created);
  const ignored = (reason: string): BillingEvent => ({ kind: 'ignored', eventId, type, reason });
  const object = parsed.data.data.object;

  switch (type) {
    case 'checkout.session.completed':
    case 'checkout.session.async_payment_succeeded': {
      const s = stripeCheckoutSession.safeParse(object);
      if (!s.success) return ignored('malformed checkout session');
      const session = s.data;
      const userId = session.metadata?.user_id ?? session.client_reference_id ?? undefined;
      const customerId = refId(session.customer);
      const key = session.metadata?.item ?? '';
      const paid = session.payment_status === 'paid' || session.payment_status === 'no_payment_required';
      if (session.mode === 'subscription') {
        const subscriptionId = refId(session.subscription);
        const planMatch = /^plan:(\d)$/.exec(key);
        const plan = planMatch ? Number(planMatch[1]) : NaN;
        if (!subscriptionId) return ignored('subscription checkout without a subscription');
        return {
          kind: 'subscription',
          eventId,
          type,
          at,
          subscriptionId,
          userId,
          customerId,
          plan: isPlanNumber(plan) ? plan : undefined,
          status: paid ? 'active' : 'incomplete',
          // A paid checkout of a plan: its subscription replaces the user's other plans.
          isNewPlan: paid,
        };
      }
      if (session.mode !== 'payment') return ignored(`checkout mode ${session.mode} sells nothing here`);
      if (!paid) return ignored('payment not completed yet');
      const amountCents = session.amount_total ?? null;
      const deviceId = Number(session.metadata?.device_id);
      const item =
        key === 'reset'
          ? ({ kind: 'reset' } as const)
          : key === 'device' && Number.isSafeInteger(deviceId) && deviceId > 0
            ? ({ kind: 'device', deviceId } as const)
            : null;
      if (!item) return ignored('checkout without a known item in its metadata');
      return { kind: 'purchase', eventId, type, at, userId, customerId, item, amountCents };
    }

    case 'invoice.paid': {
      const i = stripeInvoice.safeParse(object);
      if (!i.success) return ignored('malformed invoice');
      const invoice = i.data;
      const subscriptionId =
        refId(invoice.subscription) ?? refId(invoice.parent?.subscription_details?.subscription);
      if (!subscriptionId) return ignored('invoice not for a subscription');
      const ends = invoice.lines.data.flatMap((l) => (l.period ? [l.period.end] : []));
      const plan = invoice.lines.data
        .map((l) => planOfPrice(prices, l.price?.id ?? refId(l.pricing?.price_details?.price)))
        .find((p) => p !== undefined);
      return {
        kind: 'subscription',
        eventId,
        type,
        at,
        subscriptionId,
        userId: invoice.parent?.subscription_details?.metadata?.user_id,
        customerId: refId(invoice.customer),
        plan,
        status: 'active',
        periodEnd: ends.length ? seconds(Math.max(...ends)) : undefined,
        payment: { amountCents: invoice.amount_paid ?? null },
      };
    }

    case 'customer.subscription.created':
    case 'customer.subscription.updated':
    case 'customer.subscription.deleted': {
      const s = stripeSubscription.safeParse(object);
      if (!s.success) return ignored('malformed subscription');
      const sub = s.data;
      const itemEnds = sub.items.data.flatMap((it) => (it.current_period_end ? [it.current_period_end] : []));
      const end = sub.current_period_end ?? (itemEnds.length ? Math.max(...itemEnds) : undefined);
      const metaPlan = Number(/^plan:(\d)$/.exec(sub.metadata?.item ?? '')?.[1]);
      const plan =
        sub.items.data.map((it) => planOfPrice(prices, it.price?.id)).find((p) => p !== undefined) ??
        (isPlanNumber(metaPlan) ? metaPlan : undefined);
      return {
        kind: 'subscription',
        eventId,
        type,
        at,
        subscriptionId: sub.id,
        userId: sub.metadata?.user_id,
        customerId: refId(sub.customer),
        plan,
        // A deleted subscription is over, whatever status the object still shows.
        status: type === 'customer.subscription.deleted' ? 'canceled' : sub.status,
        periodEnd: end === undefined ? undefined : seconds(end),
        endsAtPeriodEnd: sub.cancel_at_period_end === true || typeof sub.cancel_at === 'number',
      };
    }

    default:
      return ignored('event type not used');
  }
}
