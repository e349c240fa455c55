import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { fail, notFound } from '../../platform/errors.js';
import type { SiteCheck } from '../../platform/cross-site.js';
import { publicOrigin } from '../../platform/public-origin.js';
import { opaqueIdParam } from '../../platform/params.js';
import { currentUser, type Guards } from '../auth/guard.js';
import type { DevCheckout } from './dev-checkout.js';
import { DEV_PAGE_CSP, renderCheckoutPage, renderPortalPage } from './dev-pages.js';
import { DEV_CHECKOUT_PATH, DEV_PORTAL_PATH } from './provider-dev.js';
import { isPlanNumber } from './schemas.js';
import type { BillingService, CheckoutAsk } from './service.js';

export interface BillingRoutesDeps {
  billing: BillingService;
  /** The test-mode checkout's pages, served when `providerName` is 'dev'. */
  devCheckout: DevCheckout;
  guards: Guards;
  /** The cross-site rule of the API, for the test-mode pages outside /api. */
  siteCheck: SiteCheck;
  providerName: 'stripe' | 'dev';
  /** PUBLIC_URL; the request's own origin when unset. */
  publicUrl?: string | undefined;
}

/** Stripe events are small, but an invoice with many lines can pass the API's 64 KiB body limit. */
const WEBHOOK_BODY_LIMIT_BYTES = 1024 * 1024;

const RESET_SERVICE = 5;

// Unknown services and device indexes keep their own answers below; these bound what reaches them.
const serviceParams = z.object({ n: z.string().max(8, { error: 'Unknown service.' }) });
const deviceParams = z.object({ index: z.string().max(8, { error: 'This device was not found.' }) });
const checkoutParams = z.object({ id: opaqueIdParam('checkout') });

function parseService(raw: string): CheckoutAsk {
  const n = /^\d$/.test(raw) ? Number(raw) : NaN;
  if (n === RESET_SERVICE) return { kind: 'reset' };
  if (isPlanNumber(n)) return { kind: 'plan', plan: n };
  throw fail('UNKNOWN_SERVICE');
}

export async function billingRoutes(
  app: FastifyInstance,
  { billing, devCheckout, guards, siteCheck, providerName, publicUrl }: BillingRoutesDeps,
) {
  const baseUrl = (request: FastifyRequest) => publicOrigin(request, publicUrl);
  const signedIn = { onRequest: guards.requireUser };
  const r = app.withTypeProvider<ZodTypeProvider>();

  // GETs that change state (docs/product.md, Calls): guarded as a POST is (platform/cross-site.ts).
  const changesState = { config: { changesState: true } };

  r.get(
    '/api/pay/service/:n',
    { ...signedIn, ...changesState, schema: { params: serviceParams } },
    async (request) => {
      return billing.startCheckout(currentUser(request), parseService(request.params.n), baseUrl(request));
    },
  );

  r.get(
    '/api/pay/device/:index',
    { ...signedIn, ...changesState, schema: { params: deviceParams } },
    async (request) => {
      const raw = request.params.index;
      if (!/^\d{1,6}$/.test(raw)) throw notFound('This device');
      return billing.startCheckout(
        currentUser(request),
        { kind: 'device', index: Number(raw) },
        baseUrl(request),
      );
    },
  );

  app.get('/api/portal', { ...signedIn, ...changesState }, async (request) =>
    billing.openPortal(currentUser(request), baseUrl(request)),
  );

  app.get('/api/premium', signedIn, async (request) => {
    const { premium, premiumUntil } = await billing.entitlement(currentUser(request).id);
    if (!premium) throw fail('NEED_PREMIUM');
    return { premium: true, expired_date: premiumUntil!.toISOString() };
  });

  if (providerName === 'stripe') {
    // Its own scope: the raw bytes are what Stripe signed, so this route alone gets a buffer parser.
    await app.register(async (scope) => {
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser(
        '*',
        { parseAs: 'buffer', bodyLimit: WEBHOOK_BODY_LIMIT_BYTES },
        (_req, body, done) => done(null, body),
      );
      scope.post('/api/webhooks/stripe', { bodyLimit: WEBHOOK_BODY_LIMIT_BYTES }, async (request) => {
        const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        const outcome = await billing.handleWebhook(body, request.headers);
        return { received: true, outcome };
      });
    });
  }

  if (providerName === 'dev') {
    await app.register(async (scope) => {
      // The page's forms post no fields; accept their content type and ignore the body.
      scope.addContentTypeParser(
        'application/x-www-form-urlencoded',
        { parseAs: 'string' },
        (_req, _body, done) => done(null, {}),
      );
      scope.addHook('onRequest', async (request, reply) => {
        reply.header('content-security-policy', DEV_PAGE_CSP).header('cache-control', 'no-store');
        // Outside /api, so the global cross-site guard does not run: the same rule, here.
        await siteCheck(request);
      });

      const dev = scope.withTypeProvider<ZodTypeProvider>();
      const checkout = { ...signedIn, schema: { params: checkoutParams } };
      dev.get(`${DEV_CHECKOUT_PATH}/:id`, checkout, async (request, reply) => {
        const view = await devCheckout.view(request.params.id, currentUser(request).id);
        return reply.type('text/html; charset=utf-8').send(renderCheckoutPage(view, DEV_CHECKOUT_PATH));
      });

      dev.post(`${DEV_CHECKOUT_PATH}/:id/pay`, checkout, async (request, reply) => {
        return reply.redirect(await devCheckout.pay(request.params.id, currentUser(request).id), 303);
      });

      dev.post(`${DEV_CHECKOUT_PATH}/:id/cancel`, checkout, async (request, reply) => {
        return reply.redirect(await devCheckout.cancel(request.params.id, currentUser(request).id), 303);
      });

      scope.get(DEV_PORTAL_PATH, signedIn, async (request, reply) => {
        const user = currentUser(request);
        const history = await billing.paymentHistory(user.id);
        return reply.type('text/html; charset=utf-8').send(renderPortalPage({ userId: user.id, ...history }));
      });
    });
  }
}
