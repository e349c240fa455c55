import type { IncomingMessage, ServerResponse } from 'node:http';
import fastifyHelmet from '@fastify/helmet';
import type { FastifyInstance } from 'fastify';
import helmet from 'helmet';

/**
 * Image hosts the web app loads from: the public flag host of the app card (apps/web's flagUrl)
 * and the store's icon hosts: Apple's artwork CDN, where its icon URLs point today, and the older
 * phobos.apple.com hosts that records of long-unchanged apps still name.
 */
export const IMAGE_HOSTS = [
  'https://flagcdn.com',
  'https://*.mzstatic.com',
  'https://*.phobos.apple.com',
] as const;

/**
 * The Content-Security-Policy of the app and the API. The built SPA loads only its own hashed
 * scripts, styles and fonts (bootstrap-icons' font files are among its assets) and talks only to its
 * own API; React sets inline styles through the DOM, which style-src 'self' allows. Bootstrap's CSS
 * draws a few icons as data: SVG images.
 */
export function contentSecurityPolicy(isHttps: boolean) {
  return {
    useDefaults: false,
    directives: {
      defaultSrc: ["'self'"],
      baseUri: ["'self'"],
      connectSrc: ["'self'"],
      fontSrc: ["'self'"],
      formAction: ["'self'"],
      frameAncestors: ["'none'"],
      imgSrc: ["'self'", 'data:', ...IMAGE_HOSTS],
      manifestSrc: ["'self'"],
      objectSrc: ["'none'"],
      scriptSrc: ["'self'"],
      scriptSrcAttr: ["'none'"],
      styleSrc: ["'self'"],
      workerSrc: ["'self'"],
      // Over plain http (a LAN install, a laptop) upgrading would break every asset.
      ...(isHttps ? { upgradeInsecureRequests: [] } : {}),
    },
  };
}

/** The one helmet configuration: CSP, frame and sniffing protection, a same-origin referrer. */
function helmetOptions(isHttps: boolean) {
  return {
    contentSecurityPolicy: contentSecurityPolicy(isHttps),
    // require-corp would block the flag and icon images: their hosts send no CORP header.
    crossOriginEmbedderPolicy: false,
    frameguard: { action: 'deny' as const },
    referrerPolicy: { policy: 'same-origin' as const },
    // HSTS only when PUBLIC_URL is https: a browser told so by a plain-http install would refuse it.
    strictTransportSecurity: isHttps ? { maxAge: 31_536_000, includeSubDomains: false } : false,
  };
}

/**
 * The same headers as a plain map, for the answers written before any hook runs: a request Node's
 * parser refused (client-error.ts) and an address the router could not decode (app.ts,
 * frameworkErrors). Helmet's own middleware fills it, so the two can never disagree.
 */
export function securityHeaderMap(isHttps: boolean): Readonly<Record<string, string>> {
  const headers: Record<string, string> = {};
  const collector = {
    setHeader(name: string, value: unknown) {
      headers[name.toLowerCase()] = String(value);
    },
    removeHeader(name: string) {
      delete headers[name.toLowerCase()];
    },
  };
  helmet(helmetOptions(isHttps))({} as IncomingMessage, collector as unknown as ServerResponse, () => {});
  return Object.freeze(headers);
}

/** @fastify/helmet on every answer that goes through the router. */
export async function registerSecurityHeaders(app: FastifyInstance, options: { isHttps: boolean }) {
  await app.register(fastifyHelmet, { global: true, ...helmetOptions(options.isHttps) });
}
