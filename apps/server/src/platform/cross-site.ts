import type { FastifyInstance, FastifyRequest } from 'fastify';
import { fail } from './errors.js';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The request's path as the router sees it: percent-escapes decoded, no query. `/%61pi/app/1/2`
 * is `/api/app/1/2` here, as it is to the router that dispatches it. A malformed escape never gets
 * this far (the router refuses it first), but an undecodable path is kept as it came.
 */
export function decodedPath(request: FastifyRequest): string {
  const raw = request.url.split('?', 1)[0] ?? '/';
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

export const isApiPath = (path: string) => path === '/api' || path.startsWith('/api/');

/**
 * The API path a request is for, or undefined when it is not for the API: the pattern of the route
 * the router chose, or, when it chose none or a catch-all, the decoded path. Never the raw URL,
 * which a percent-escape can disguise (`/%61pi/...` is routed to `/api/...`).
 */
export function apiPathOf(request: FastifyRequest): string | undefined {
  const route = request.routeOptions.url;
  if (route !== undefined && isApiPath(route)) return route;
  const decoded = decodedPath(request);
  return isApiPath(decoded) ? decoded : undefined;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A GET that changes state (docs/product.md, Calls: decrypt, pay, portal): guarded as a POST is. */
    changesState?: boolean;
  }
}

/** The request header the web app's API client sends on every call (apps/web/src/lib/api.ts). */
export const CLIENT_HEADER = 'x-sideport-client';
export const CLIENT_HEADER_VALUE = 'web';
/** The query parameter a navigation carries its one-time token in (modules/auth/navigation-tokens.ts). */
export const NAVIGATION_TOKEN_PARAM = 'nav_token';

/**
 * Where a browser says a request comes from. Browsers send Sec-Fetch-Site on every request (and
 * Origin on unsafe ones): 'same-origin' is the site, 'none' (typed in the address bar) is the site
 * for safe methods only, anything else is another site. Without Sec-Fetch-Site (older browsers)
 * the Origin must be PUBLIC_URL's when it is set, else the site the Host header names: never
 * X-Forwarded-Host, which a client may write. With neither header the request proves nothing.
 */
export function siteOf(request: FastifyRequest, publicOrigin?: string): 'same' | 'cross' | 'unknown' {
  const fetchSite = request.headers['sec-fetch-site'];
  if (typeof fetchSite === 'string') {
    if (fetchSite === 'same-origin') return 'same';
    if (fetchSite === 'none') return SAFE_METHODS.has(request.method) ? 'same' : 'cross';
    return 'cross';
  }
  const origin = request.headers.origin;
  if (origin === undefined) return 'unknown';
  const expected = publicOrigin ?? `${request.protocol}://${request.headers.host ?? ''}`;
  return origin === expected ? 'same' : 'cross';
}

/** Whether the guard must refuse this call from another site: every method but the safe ones, and GETs marked `changesState`. */
export const changesState = (request: FastifyRequest) =>
  !SAFE_METHODS.has(request.method) || request.routeOptions.config.changesState === true;

export interface SiteCheckOptions {
  /** PUBLIC_URL's origin: when set, the only Origin accepted from a browser without Sec-Fetch-Site. */
  publicOrigin?: string;
  /** The session cookie's name: a request without it carries no ambient authority. */
  sessionCookie: string;
  /** Consumes the request's one-time navigation token; true when it was the signed-in user's, for this path. */
  redeemNavigationToken(request: FastifyRequest): Promise<boolean>;
}

/**
 * Several spec calls change state with GET (decrypt, pay), so SameSite=Lax cookies are not enough:
 * every state-changing call must come from the site itself, as siteOf tells. A browser that sends
 * neither Sec-Fetch-Site nor Origin (iOS Safari before 16.4, on a link from another site too) must
 * prove it another way when it carries the session cookie: the web app's API client sends
 * `X-Sideport-Client: web`, which another site cannot send without a CORS preflight this server
 * never grants, and a navigation (the enrollment profile) carries a one-time token the page asked
 * for first. A request with neither header and no session cookie is not a browser's ambient
 * authority (CLI clients, health checks) and passes; safe calls that change nothing pass as before.
 */
export function createSiteCheck(options: SiteCheckOptions) {
  return async (request: FastifyRequest) => {
    const site = siteOf(request, options.publicOrigin);
    if (site === 'cross') throw fail('CROSS_SITE_REFUSED');
    if (site === 'same' || !changesState(request)) return;
    if (request.cookies[options.sessionCookie] === undefined) return;
    if (request.headers[CLIENT_HEADER] === CLIENT_HEADER_VALUE) return;
    if (await options.redeemNavigationToken(request)) return;
    throw fail('UNPROVEN_REFUSED');
  };
}

export type SiteCheck = ReturnType<typeof createSiteCheck>;

export function registerCrossSiteGuard(
  app: FastifyInstance,
  options: { exemptPrefixes: readonly string[]; check: SiteCheck },
) {
  app.addHook('onRequest', async (request) => {
    const path = apiPathOf(request);
    if (path === undefined) return;
    if (options.exemptPrefixes.some((prefix) => path.startsWith(prefix))) return;
    await options.check(request);
  });
}
