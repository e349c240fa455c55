import { paymentItemLabel, planLabel, replacesSentence, type Item } from './schemas.js';

/** Small self-contained HTML pages of the dev (test-mode) provider. */

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

export const dollars = (cents: number | null) => (cents === null ? '-' : `$${(cents / 100).toFixed(2)}`);

/** No script, no external resource; forms may only post to this site. */
export const DEV_PAGE_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

function page(title: string, body: string) {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${escapeHtml(title)} - TEST MODE</title>
<style>
body{font-family:system-ui,sans-serif;max-width:32rem;margin:2rem auto;padding:0 1rem;color:#222}
.banner{background:#ffcc00;color:#000;font-weight:bold;padding:.5rem 1rem;border-radius:.25rem;text-align:center}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.4rem;text-align:left}
form{display:inline}button{font-size:1rem;padding:.5rem 1.5rem;margin:.5rem .5rem 0 0;cursor:pointer}
.pay{background:#0a7d32;color:#fff;border:0;border-radius:.25rem}.cancel{background:#eee;border:1px solid #aaa;border-radius:.25rem}
.date{white-space:nowrap}.note{background:#eef4ff;padding:.5rem 1rem;border-radius:.25rem}
</style>
</head>
<body>
<header><p class="banner" role="note">TEST MODE: no real payment is made.</p></header>
<main>
${body}
</main>
</body>
</html>
`;
}

export interface CheckoutView {
  id: string;
  item: Item;
  label: string;
  amountCents: number;
  outcome: string | null;
  isOpen: boolean;
  /** Plans the user has now, which this one replaces once paid. */
  replaces: readonly number[];
}

export function renderCheckoutPage(c: CheckoutView, basePath: string) {
  const action = `${basePath}/${encodeURIComponent(c.id)}`;
  const body = c.isOpen
    ? `${c.replaces.length ? `<p class="note">${escapeHtml(replacesSentence(c.replaces))}</p>\n` : ''}<form method="post" action="${escapeHtml(action)}/pay"><button type="submit" class="pay">Pay</button></form>
<form method="post" action="${escapeHtml(action)}/cancel"><button type="submit" class="cancel">Cancel</button></form>`
    : `<p>${c.outcome === 'paid' ? 'This checkout is paid.' : 'This test checkout has expired or was canceled.'}</p>
<p><a href="/my">Back to My page</a></p>`;
  return page(
    'Checkout',
    `<h1>Checkout</h1>
<table>
<tr><th>Item</th><td>${escapeHtml(c.label)}</td></tr>
<tr><th>Price</th><td>${dollars(c.amountCents)}${c.item.kind === 'plan' ? ' (renews until canceled)' : ''}</td></tr>
</table>
${body}`,
  );
}

export interface PortalView {
  userId: string;
  payments: Array<{ item: string; amountCents: number | null; paidAt: Date }>;
  subscriptions: Array<{
    subscriptionId: string;
    plan: number;
    status: string;
    currentPeriodEnd: Date | null;
  }>;
}

export function renderPortalPage(v: PortalView) {
  const payments = v.payments.length
    ? `<table><tr><th>Date</th><th>Item</th><th>Amount</th></tr>
${v.payments
  .map(
    (p) =>
      `<tr><td class="date">${p.paidAt.toISOString().slice(0, 10)}</td><td>${escapeHtml(paymentItemLabel(p.item))}</td><td>${dollars(p.amountCents)}</td></tr>`,
  )
  .join('\n')}
</table>`
    : '<p>No payments yet.</p>';
  const subs = v.subscriptions.length
    ? `<table><tr><th>Plan</th><th>Status</th><th>Until</th></tr>
${v.subscriptions
  .map(
    (s) =>
      `<tr><td>${escapeHtml(planLabel(s.plan))}</td><td>${escapeHtml(s.status)}</td><td class="date">${s.currentPeriodEnd ? s.currentPeriodEnd.toISOString().slice(0, 10) : '-'}</td></tr>`,
  )
  .join('\n')}
</table>`
    : '<p>No subscriptions.</p>';
  return page(
    'Billing Portal',
    `<h1>Billing Portal</h1>
<p>Account: ${escapeHtml(v.userId)}</p>
<h2>Subscriptions</h2>
${subs}
<h2>Payments</h2>
${payments}
<p><a href="/my">Back to My page</a></p>`,
  );
}
