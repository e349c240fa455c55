import type { FastifyInstance, FastifyRequest } from 'fastify';
import { forbidden } from './errors.js';

export interface CrossSiteOptions {
  /** Origin of the public site, when it differs from what the Host header says (behind a proxy). */
  publicOrigin?: string;
  /** Path prefixes that authenticate on their own (agent token, webhook signature, enrollment). */
  exemptPrefixes: readonly string[];
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

function requestOrigin(request: FastifyRequest) {
  return `${request.protocol}://${request.host}`;
}

/**
 * Several spec calls change state with GET (decrypt, pay), so SameSite=Lax cookies are not enough:
 * every /api call must come from the site itself. Browsers send Sec-Fetch-Site on every request
 * (and Origin on unsafe ones); 'same-origin' passes, 'none' (typed in the address bar) passes only
 * for safe methods, anything else is refused. A request with neither header is not a browser's,
 * so it carries no ambient cookie risk and passes (CLI clients, health checks).
 */
export function isSameSiteRequest(request: FastifyRequest, publicOrigin?: string): boolean {
  const fetchSite = request.headers['sec-fetch-site'];
  if (typeof fetchSite === 'string') {
    if (fetchSite === 'same-origin') return true;
    if (fetchSite === 'none') return SAFE_METHODS.has(request.method);
    return false;
  }
  const origin = request.headers.origin;
  if (typeof origin === 'string') {
    return origin === requestOrigin(request) || (publicOrigin !== undefined && origin === publicOrigin);
  }
  return true;
}

export function registerCrossSiteGuard(app: FastifyInstance, options: CrossSiteOptions) {
  app.addHook('onRequest', async (request) => {
    const path = request.url;
    if (!path.startsWith('/api/')) return;
    if (options.exemptPrefixes.some((prefix) => path.startsWith(prefix))) return;
    if (!isSameSiteRequest(request, options.publicOrigin)) {
      throw forbidden('Cross-site requests are not allowed.');
    }
  });
}
