import fastifyHelmet from '@fastify/helmet';
import type { FastifyInstance } from 'fastify';

/**
 * Image hosts the web app loads from: the public flag host of the app card (apps/web's flagUrl)
 * and the store's icon hosts: Apple's artwork CDN, where its icon URLs point today, and the older
 * phobos.apple.com hosts that records of long-unchanged apps still name.
 */
export const IMAGE_HOSTS = ['https://flagcdn.com', 'https://*.mzstatic.com', 'https://*.phobos.apple.com'] as const;

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

/**
 * @fastify/helmet on every answer: CSP, frame and sniffing protection, a same-origin referrer.
 * HSTS only when PUBLIC_URL is https: a browser told so by a plain-http install would refuse it.
 */
export async function registerSecurityHeaders(app: FastifyInstance, options: { isHttps: boolean }) {
  await app.register(fastifyHelmet, {
    global: true,
    contentSecurityPolicy: contentSecurityPolicy(options.isHttps),
    // require-corp would block the flag and icon images: their hosts send no CORP header.
    crossOriginEmbedderPolicy: false,
    frameguard: { action: 'deny' },
    referrerPolicy: { policy: 'same-origin' },
    strictTransportSecurity: options.isHttps ? { maxAge: 31_536_000, includeSubDomains: false } : false,
  });
}
