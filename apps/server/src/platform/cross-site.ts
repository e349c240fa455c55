import type { FastifyInstance, FastifyRequest } from 'fastify';
import { forbidden } from './errors.js';

export interface CrossSiteOptions {
  /** PUBLIC_URL's origin: when set, the only Origin accepted from a browser without Sec-Fetch-Site. */
  publicOrigin?: string;
  /** Route prefixes that authenticate on their own (agent token, webhook signature, enrollment). */
  exemptPrefixes: readonly string[];
}

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

/**
 * Several spec calls change state with GET (decrypt, pay), so SameSite=Lax cookies are not enough:
 * every /api call must come from the site itself. Browsers send Sec-Fetch-Site on every request
 * (and Origin on unsafe ones); 'same-origin' passes, 'none' (typed in the address bar) passes only
 * for safe methods, anything else is refused. Without Sec-Fetch-Site (older browsers) the Origin
 * must be PUBLIC_URL's when it is set, else the site the Host header names: never X-Forwarded-Host,
 * which a client may write. A request with neither header is not a browser's, so it carries no
 * ambient cookie risk and passes (CLI clients, health checks).
 */
export function isSameSiteRequest(request: FastifyRequest, publicOrigin?: string): boolean {
  const fetchSite = request.headers['sec-fetch-site'];
  if (typeof fetchSite === 'string') {
    if (fetchSite === 'same-origin') return true;
    if (fetchSite === 'none') return SAFE_METHODS.has(request.method);
    return false;
  }
  const origin = request.headers.origin;
  if (origin === undefined) return true;
  if (publicOrigin !== undefined) return origin === publicOrigin;
  return origin === `${request.protocol}://${request.headers.host ?? ''}`;
}

export function registerCrossSiteGuard(app: FastifyInstance, options: CrossSiteOptions) {
  app.addHook('onRequest', async (request) => {
    const path = apiPathOf(request);
    if (path === undefined) return;
    if (options.exemptPrefixes.some((prefix) => path.startsWith(prefix))) return;
    if (!isSameSiteRequest(request, options.publicOrigin)) {
      throw forbidden('Cross-site requests are not allowed.');
    }
  });
}
