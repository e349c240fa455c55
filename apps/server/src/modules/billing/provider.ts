import type { BillingEvent, Item } from './schemas.js';

export interface CheckoutRequest {
  user: { id: string };
  item: Item;
  successUrl: string;
  cancelUrl: string;
  /** The plans this one replaces once paid (a subscriber changing plan), to tell the buyer. */
  replaces: readonly number[];
}

export interface PortalRequest {
  user: { id: string };
  returnUrl: string;
}

/** Where a signed-in user is sent to pay (Stripe Checkout, or the local test-mode page). */
export interface BillingProvider {
  readonly name: 'stripe' | 'dev';
  createCheckout(request: CheckoutRequest): Promise<{ url: string }>;
  createPortal(request: PortalRequest): Promise<{ url: string }>;
  /**
   * Ends one of the provider's subscriptions now, crediting its unused paid time where the
   * provider holds money; one that has already ended counts as done.
   */
  endSubscription(subscriptionId: string): Promise<void>;
  /** Verifies and reduces a webhook delivery; throws 400 'Invalid signature.' (stripe only). */
  parseWebhook?(rawBody: Buffer, headers: Record<string, string | string[] | undefined>): BillingEvent;
}

/** The provider's customer of each user, kept in our database. */
export interface CustomerStore {
  findCustomerId(userId: string): Promise<string | undefined>;
  /** Saves the id unless one is already saved; returns the saved one. */
  saveCustomerId(userId: string, customerId: string): Promise<string>;
}
