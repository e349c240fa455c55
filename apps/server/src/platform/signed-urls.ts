import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * URLs that carry their own permission: an expiry and an HMAC-SHA256 of the path and expiry under
 * a server key. Downloads and OTA manifests use them: a new tab or an iPhone fetching a manifest
 * sends no cookie. Changing any character of the path or expiry breaks the signature.
 */
export interface UrlSigner {
  /** `path?expires=<unix s>&sig=<hex>` valid for `ttlSeconds`. */
  sign(path: string, ttlSeconds: number): string;
  /** 'ok', or why not: a tampered URL and an expired one are told apart for the log only. */
  verify(path: string, query: { expires?: unknown; sig?: unknown }): 'ok' | 'expired' | 'invalid';
}

export function createUrlSigner(key: Buffer, clock: () => Date): UrlSigner {
  const mac = (path: string, expires: string) =>
    createHmac('sha256', key).update(`${path}\n${expires}`).digest();
  return {
    sign(path, ttlSeconds) {
      const expires = String(Math.floor(clock().getTime() / 1000) + ttlSeconds);
      const separator = path.includes('?') ? '&' : '?';
      return `${path}${separator}expires=${expires}&sig=${mac(path, expires).toString('hex')}`;
    },
    verify(path, { expires, sig }) {
      if (
        typeof expires !== 'string' ||
        typeof sig !== 'string' ||
        !/^\d{1,12}$/.test(expires) ||
        !/^[0-9a-f]{64}$/.test(sig)
      ) {
        return 'invalid';
      }
      if (!timingSafeEqual(mac(path, expires), Buffer.from(sig, 'hex'))) return 'invalid';
      return Number(expires) * 1000 < clock().getTime() ? 'expired' : 'ok';
    },
  };
}
