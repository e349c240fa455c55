import { isIPv6 } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { fail } from './errors.js';

/** One label of a host name; underscores too, as container and LAN names have them. */
const LABEL = '[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?';
/** A host name or IPv4 literal (dot-separated labels, a final dot allowed), or an IPv6 literal in brackets, then an optional port. */
const HOST = new RegExp(
  `^(?:(?<name>${LABEL}(?:\\.${LABEL})*\\.?)|\\[(?<ipv6>[0-9A-Fa-f:.]+)\\])(?::(?<port>\\d{1,5}))?$`,
);

/** Whether `host` is what a Host header may hold (RFC 9110, section 7.2): a host and an optional port. */
export function isValidHost(host: string): boolean {
  const match = HOST.exec(host);
  if (!match?.groups) return false;
  const { name, ipv6, port } = match.groups;
  if (name !== undefined && name.length > 253) return false;
  if (ipv6 !== undefined && !isIPv6(ipv6)) return false;
  return port === undefined || (Number(port) >= 1 && Number(port) <= 65535);
}

/**
 * Links the server hands out (install links, the enrollment profile, checkout return URLs,
 * download URLs) are made from PUBLIC_URL, else from the request's own Host (X-Forwarded-Host and
 * -Proto behind a trusted proxy). Those are checked once, before any hook that can change
 * anything: a malformed one is a 400 sentence for every route, as HTTP asks of a server (RFC 9112,
 * section 3.2), never a 500 after a state change, and a link can never carry it.
 */
export function registerHostCheck(app: FastifyInstance) {
  app.addHook('onRequest', async (request) => {
    if (request.host !== '' && !isValidHost(request.host)) {
      throw fail('HOST_INVALID');
    }
    if (request.protocol !== 'http' && request.protocol !== 'https') {
      throw fail('FORWARDED_PROTO_INVALID');
    }
  });
}

/** The origin absolute links are made with: PUBLIC_URL's, else the request's own (checked by registerHostCheck). */
export function publicOrigin(request: FastifyRequest, publicUrl: string | undefined): string {
  if (publicUrl !== undefined) return new URL(publicUrl).origin;
  // HTTP/1.0 may leave the Host out: no link can be made for it.
  if (request.host === '') throw fail('HOST_MISSING');
  return new URL(`${request.protocol}://${request.host}`).origin;
}
