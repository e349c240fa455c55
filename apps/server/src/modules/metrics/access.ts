import { createHash, timingSafeEqual } from 'node:crypto';

export type MetricsRefusal = { status: 401 | 403; message: string };

export const METRICS_LOOPBACK_ONLY =
  'Metrics are served to this machine only. Set METRICS_TOKEN to let a scraper elsewhere read them.';
export const METRICS_TOKEN_NEEDED = 'Send the metrics token: Authorization: Bearer <METRICS_TOKEN>.';

/** 127.0.0.0/8 and ::1, also as IPv4-mapped IPv6 (`::ffff:127.0.0.1`, a dual-stack socket's form). */
export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4) || address === '::1';
}

const digest = (value: string) => createHash('sha256').update(value).digest();

/**
 * Who may read /metrics. With METRICS_TOKEN every caller needs `Authorization: Bearer <token>`,
 * this machine included (a proxy on the same machine would otherwise open it to anyone). Without
 * it, only a caller on this machine: judged by the socket's peer address, never by
 * X-Forwarded-For, which any client can write. The token is compared as SHA-256 digests in
 * constant time, so neither its content nor its length leaks through timing.
 */
export function metricsRefusal(
  token: string | undefined,
  request: { remoteAddress: string | undefined; authorization: string | undefined },
): MetricsRefusal | undefined {
  if (token === undefined) {
    return isLoopback(request.remoteAddress) ? undefined : { status: 403, message: METRICS_LOOPBACK_ONLY };
  }
  const match = /^Bearer +(\S+) *$/i.exec(request.authorization ?? '');
  if (match && timingSafeEqual(digest(match[1]!), digest(token))) return undefined;
  return { status: 401, message: METRICS_TOKEN_NEEDED };
}
