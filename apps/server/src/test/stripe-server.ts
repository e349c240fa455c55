import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fixturesDir } from './harness.js';

/**
 * A local server speaking Stripe's API wire format for the calls Sideport makes: form-encoded
 * requests, JSON objects shaped like Stripe's own (from Stripe's OpenAPI fixtures), Stripe's error
 * envelope. It records every request so tests can assert what was sent.
 */

export interface RecordedRequest {
  method: string;
  path: string;
  /** The form body (the query of GET and DELETE) as sent, flat keys: `line_items[0][price]`. */
  form: Record<string, string>;
  idempotencyKey: string | undefined;
}

type Resources = Record<string, Record<string, unknown>>;
let resources: Resources | undefined;
function fixture(name: string): Record<string, unknown> {
  resources ??= (
    JSON.parse(readFileSync(path.join(fixturesDir, 'stripe/stripe_openapi_fixtures3.json'), 'utf8')) as {
      resources: Resources;
    }
  ).resources;
  return structuredClone(resources[name]!);
}

/** metadata[a]=1&metadata[b]=2 -> { a: '1', b: '2' } */
function nested(form: Record<string, string>, prefix: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(form)) {
    const m = new RegExp(`^${prefix.replace(/[[\]]/g, '\\$&')}\\[([^\\]]+)\\]$`).exec(key);
    if (m) out[m[1]!] = value;
  }
  return out;
}

export interface StripeServer {
  url: string;
  requests: RecordedRequest[];
  /** Subscriptions Stripe holds, by id: tests add the ones their webhook events speak of. */
  subscriptions: Map<string, { customer: string; status: string }>;
  /** The next request is answered with this Stripe error instead. */
  failNext(status: number, type: string, message: string): void;
  /**
   * Every request is answered with this Stripe error (with `Retry-After` when `retryAfterS` is
   * given, as Stripe's rate limiter sends a 429) until called with undefined: an outage.
   */
  failAll(failure: StripeFailure | undefined): void;
  /**
   * Each answer waits this long first (Stripe slow); the request is recorded, and acted on, when
   * it arrives, as Stripe does with a request whose client gave up waiting. 0 answers at once.
   */
  delayMs: number;
  close(): Promise<void>;
}

export interface StripeFailure {
  status: number;
  type: string;
  message: string;
  retryAfterS?: number;
}

/** Price ids for the server's STRIPE_PRICE_* settings, as a deployment names its Stripe prices. */
export const STRIPE_TEST_PRICES = {
  STRIPE_PRICE_MONTHLY_20: 'price_monthly_20',
  STRIPE_PRICE_YEARLY_20: 'price_yearly_20',
  STRIPE_PRICE_MONTHLY_50: 'price_monthly_50',
  STRIPE_PRICE_YEARLY_50: 'price_yearly_50',
  STRIPE_PRICE_RESET: 'price_reset',
  STRIPE_PRICE_DEVICE: 'price_device',
};

export async function startStripeServer(options: { secretKey: string }): Promise<StripeServer> {
  const requests: RecordedRequest[] = [];
  const subscriptions = new Map<string, { customer: string; status: string }>();
  const byIdempotencyKey = new Map<string, unknown>();
  let failure: StripeFailure | undefined;
  let lasting: StripeFailure | undefined;
  let seq = 0;
  const now = () => Math.floor(Date.now() / 1000);

  function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
    const json = JSON.stringify(body);
    const write = () => {
      if (res.destroyed) return;
      res.writeHead(status, {
        'content-type': 'application/json',
        'request-id': `req_test_${++seq}`,
        // Tells the client not to retry our simulated failures.
        'stripe-should-retry': 'false',
        ...headers,
      });
      res.end(json);
    };
    if (state.delayMs > 0) setTimeout(write, state.delayMs);
    else write();
  }
  const error = (res: ServerResponse, f: StripeFailure) =>
    send(
      res,
      f.status,
      { error: { type: f.type, message: f.message } },
      f.retryAfterS === undefined ? {} : { 'retry-after': String(f.retryAfterS) },
    );

  function answer(req: IncomingMessage, form: Record<string, string>): [number, unknown] {
    const url = req.url?.split('?')[0] ?? '';
    const id = (prefix: string) => `${prefix}_test_${String(++seq).padStart(14, '0')}`;
    if (req.method === 'POST' && url === '/v1/customers') {
      return [
        200,
        {
          ...fixture('customer'),
          id: id('cus'),
          created: now(),
          email: form.email ?? null,
          description: form.description ?? null,
          metadata: nested(form, 'metadata'),
        },
      ];
    }
    if (req.method === 'POST' && url === '/v1/checkout/sessions') {
      if (!form.mode || !form.success_url || !form['line_items[0][price]']) {
        return [
          400,
          {
            error: {
              type: 'invalid_request_error',
              message: 'Missing required param: mode, success_url or line_items.',
            },
          },
        ];
      }
      const sessionId = id('cs');
      return [
        200,
        {
          ...fixture('checkout.session'),
          id: sessionId,
          object: 'checkout.session',
          created: now(),
          expires_at: now() + 86_400,
          mode: form.mode,
          customer: form.customer ?? null,
          client_reference_id: form.client_reference_id ?? null,
          metadata: nested(form, 'metadata'),
          success_url: form.success_url,
          cancel_url: form.cancel_url ?? null,
          status: 'open',
          payment_status: 'unpaid',
          subscription: null,
          url: `https://checkout.stripe.test/c/pay/${sessionId}`,
        },
      ];
    }
    if (req.method === 'POST' && url === '/v1/billing_portal/sessions') {
      if (!form.customer)
        return [
          400,
          { error: { type: 'invalid_request_error', message: 'Missing required param: customer.' } },
        ];
      const sessionId = id('bps');
      return [
        200,
        {
          ...fixture('billing_portal.session'),
          id: sessionId,
          created: now(),
          customer: form.customer,
          flow: null,
          livemode: false,
          return_url: form.return_url ?? null,
          url: `https://billing.stripe.test/p/session/${sessionId}`,
        },
      ];
    }
    const subscriptionPath = /^\/v1\/subscriptions\/([^/]+)$/.exec(url);
    if (req.method === 'DELETE' && subscriptionPath) {
      const subId = decodeURIComponent(subscriptionPath[1]!);
      const sub = subscriptions.get(subId);
      // Stripe answers a canceled subscription like one it never had.
      if (!sub || sub.status === 'canceled') {
        return [
          404,
          {
            error: {
              type: 'invalid_request_error',
              code: 'resource_missing',
              param: 'id',
              message: `No such subscription: '${subId}'`,
            },
          },
        ];
      }
      sub.status = 'canceled';
      return [
        200,
        {
          ...fixture('subscription'),
          id: subId,
          customer: sub.customer,
          status: 'canceled',
          canceled_at: now(),
          ended_at: now(),
          cancellation_details: {
            comment: form['cancellation_details[comment]'] ?? null,
            feedback: null,
            reason: 'cancellation_requested',
          },
        },
      ];
    }
    return [
      404,
      {
        error: {
          type: 'invalid_request_error',
          message: `Unrecognized request URL (${req.method}: ${url}).`,
        },
      },
    ];
  }

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const query = req.url?.split('?')[1] ?? '';
      const hasQueryParams = req.method === 'GET' || req.method === 'DELETE';
      const form = Object.fromEntries(new URLSearchParams(hasQueryParams ? query : body));
      const idempotencyKey = req.headers['idempotency-key'] as string | undefined;
      requests.push({ method: req.method ?? '', path: req.url ?? '', form, idempotencyKey });
      if (req.headers.authorization !== `Bearer ${options.secretKey}`) {
        return error(res, {
          status: 401,
          type: 'invalid_request_error',
          message: 'Invalid API Key provided.',
        });
      }
      if (failure ?? lasting) {
        const f = (failure ?? lasting)!;
        failure = undefined;
        return error(res, f);
      }
      // Stripe answers a repeated idempotency key with the first answer.
      const key = idempotencyKey ? `${req.url} ${idempotencyKey}` : undefined;
      if (key && byIdempotencyKey.has(key)) return send(res, 200, byIdempotencyKey.get(key));
      const [status, payload] = answer(req, form);
      if (key && status === 200) byIdempotencyKey.set(key, payload);
      send(res, status, payload);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const state: StripeServer = {
    url: `http://127.0.0.1:${port}`,
    requests,
    subscriptions,
    delayMs: 0,
    failNext(status, type, message) {
      failure = { status, type, message };
    },
    failAll(f) {
      lasting = f;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
  return state;
}
