import { createHash, timingSafeEqual } from 'node:crypto';

export type MetricsRefusal = { status: 401 | 403; message: string };

export const METRICS_LOOPBACK_ONLY =
  'Metrics are served to this machine only. Set METRICS_TOKEN to let a scraper elsewhere read them.';
export const METRICS_FORWARDED =
  'Metrics are served to this machine only, and this request was forwarded for another one. Set METRICS_TOKEN to let a scraper elsewhere read them.';
export const METRICS_TOKEN_NEEDED = 'Send the metrics token: Authorization: Bearer <METRICS_TOKEN>.';

/** 127.0.0.0/8 and ::1, also as IPv4-mapped IPv6 (`::ffff:127.0.0.1`, a dual-stack socket's form). */
export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4) || address === '::1';
}

/** The headers a proxy names its client in. */
export interface ForwardedHeaders {
  'x-forwarded-for'?: string | string[] | undefined;
  forwarded?: string | string[] | undefined;
  'x-real-ip'?: string | string[] | undefined;
}

/**
 * Every client address the forwarding headers name: each X-Forwarded-For entry, each `for=` of
 * Forwarded (RFC 7239: quoted, `[v6]:port`, or `unknown` and `_obfuscated` names), X-Real-IP.
 */
export function forwardedClients(headers: ForwardedHeaders): string[] {
  const values = (value: string | string[] | undefined) => [value ?? []].flat();
  const xff = values(headers['x-forwarded-for']).flatMap((v) => v.split(','));
  const forwarded = values(headers.forwarded).flatMap((v) =>
    [...v.matchAll(/(?:^|[;,\s])for\s*=\s*("[^"]*"|[^;,\s]*)/gi)].map((m) => {
      const node = m[1]!.replace(/^"|"$/g, '');
      // [2001:db8::1]:4711 -> 2001:db8::1; 192.0.2.1:4711 -> 192.0.2.1
      return /^\[([^\]]*)\]/.exec(node)?.[1] ?? node.replace(/^(\d+\.\d+\.\d+\.\d+):\d+$/, '$1');
    }),
  );
  return [...xff, ...forwarded, ...values(headers['x-real-ip'])].map((v) => v.trim());
}

const digest = (value: string) => createHash('sha256').update(value).digest();

/**
 * Who may read /metrics. With METRICS_TOKEN every caller needs `Authorization: Bearer <token>`,
 * this machine included (a proxy on the same machine would otherwise open it to anyone). Without
 * it, only a caller on this machine: judged by the socket's peer address, never by
 * X-Forwarded-For, which any client can write. A reverse proxy on this machine connects from
 * loopback for everyone, so a request whose forwarding headers (X-Forwarded-For, Forwarded,
 * X-Real-IP) name any client that is not loopback (an unknown or hidden one included) is refused
 * too, with a sentence that says to set the token. The token is compared as SHA-256 digests in
 * constant time, so neither its content nor its length leaks through timing.
 */
export function metricsRefusal(
  token: string | undefined,
  request: {
    remoteAddress: string | undefined;
    authorization: string | undefined;
    headers: ForwardedHeaders;
  },
): MetricsRefusal | undefined {
  if (token === undefined) {
    if (!isLoopback(request.remoteAddress)) return { status: 403, message: METRICS_LOOPBACK_ONLY };
    const forwardedFor = forwardedClients(request.headers);
    return forwardedFor.every(isLoopback) ? undefined : { status: 403, message: METRICS_FORWARDED };
  }
  const match = /^Bearer +(\S+) *$/i.exec(request.authorization ?? '');
  if (match && timingSafeEqual(digest(match[1]!), digest(token))) return undefined;
  return { status: 401, message: METRICS_TOKEN_NEEDED };
}
