/**
 * How the App Store Connect client talks to Apple: JSON:API over HTTPS, authenticated by an ES256
 * JWT made from the team's API key (.p8) and made again before it expires. Every call is bounded
 * by a timeout and a body size; lists follow `links.next`, only to the same origin (the token must
 * not travel elsewhere). Apple's refusals become AscErrors (asc-errors.ts).
 */
import { importPKCS8, SignJWT, type CryptoKey } from 'jose';
import { parseRetryAfter } from '../../platform/faults.js';
import { appleError, AscError } from './asc-errors.js';
import type { AscPage } from './asc-resources.js';

export const ASC_DEFAULT_BASE_URL = 'https://api.appstoreconnect.apple.com';
export const ASC_AUDIENCE = 'appstoreconnect-v1';
/** Apple refuses tokens that live longer than 20 minutes. */
export const ASC_MAX_TOKEN_SECONDS = 20 * 60;

export interface AscKey {
  /** The key's id, shown beside it in App Store Connect (Users and Access > Integrations). */
  readonly keyId: string;
  /** The team's issuer id (a UUID) from the same page. */
  readonly issuerId: string;
  /** The downloaded AuthKey_<keyId>.p8: a PKCS#8 P-256 private key in PEM. */
  readonly privateKeyPem: string;
}

export interface AscClientOptions {
  readonly key: AscKey;
  /** ASC_BASE_URL; Apple's when absent. */
  readonly baseUrl?: string;
  /** Longest wait for one HTTP call, in milliseconds. */
  readonly timeoutMs?: number;
  /** How long each token is valid (at most 20 minutes); a token is reused until a minute before. */
  readonly tokenLifetimeSeconds?: number;
  /** Lists longer than this many pages are refused (a loop in Apple's links, or a runaway account). */
  readonly maxPages?: number;
  readonly clock?: () => Date;
  readonly fetchImpl?: typeof fetch;
}

const MAX_BODY_BYTES = 16 * 1024 * 1024;

export function createAscTransport(options: AscClientOptions) {
  const { key } = options;
  const base = new URL((options.baseUrl ?? ASC_DEFAULT_BASE_URL).replace(/\/+$/, ''));
  const timeoutMs = options.timeoutMs ?? 20_000;
  const lifetime = Math.min(options.tokenLifetimeSeconds ?? 15 * 60, ASC_MAX_TOKEN_SECONDS);
  const maxPages = options.maxPages ?? 100;
  const clock = options.clock ?? (() => new Date());
  const fetchImpl = options.fetchImpl ?? fetch;

  let signingKey: Promise<CryptoKey> | undefined;
  let cached: { token: string; expiresAt: number } | undefined;

  async function token(): Promise<string> {
    const now = Math.floor(clock().getTime() / 1000);
    if (cached && now < cached.expiresAt - 60) return cached.token;
    signingKey ??= importPKCS8(normalizePem(key.privateKeyPem), 'ES256').catch((err: unknown) => {
      signingKey = undefined;
      throw new AscError(
        'KEY_REJECTED',
        'ASC_PRIVATE_KEY is not an App Store Connect key: expected the AuthKey .p8 file (a PEM "PRIVATE KEY" on the P-256 curve).',
        undefined,
        { cause: err },
      );
    });
    const jwt = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: key.keyId, typ: 'JWT' })
      .setIssuer(key.issuerId)
      .setAudience(ASC_AUDIENCE)
      .setIssuedAt(now)
      .setExpirationTime(now + lifetime)
      .sign(await signingKey);
    cached = { token: jwt, expiresAt: now + lifetime };
    return jwt;
  }

  function urlFor(pathOrUrl: string, query?: Record<string, string | undefined>): URL {
    const url = /^https?:\/\//.test(pathOrUrl)
      ? new URL(pathOrUrl)
      : new URL(base.pathname.replace(/\/$/, '') + pathOrUrl, base);
    if (url.origin !== base.origin) {
      throw new AscError(
        'OTHER',
        `App Store Connect linked to another host (${url.origin}); Sideport follows links to ${base.origin} only.`,
      );
    }
    for (const [name, value] of Object.entries(query ?? {}))
      if (value !== undefined) url.searchParams.set(name, value);
    return url;
  }

  async function call(
    method: string,
    pathOrUrl: string,
    init: { query?: Record<string, string | undefined>; body?: unknown } = {},
  ) {
    const url = urlFor(pathOrUrl, init.query);
    const headers: Record<string, string> = {
      authorization: `Bearer ${await token()}`,
      accept: 'application/json',
    };
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    let raw: string;
    try {
      response = await fetchImpl(url, {
        method,
        headers,
        ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
        signal: AbortSignal.timeout(timeoutMs),
        redirect: 'error',
      });
      raw = await readCapped(response);
    } catch (err) {
      if (err instanceof AscError) throw err;
      const timedOut = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError');
      throw new AscError(
        'UNAVAILABLE',
        timedOut
          ? `App Store Connect did not answer within ${timeoutMs >= 1000 ? `${Math.round(timeoutMs / 1000)} s` : `${timeoutMs} ms`} (${method} ${url.pathname}). Please retry later.`
          : `App Store Connect could not be reached at ${base.origin} (${method} ${url.pathname}). Please retry later.`,
        undefined,
        { cause: err },
      );
    }
    let body: unknown;
    if (raw !== '') {
      try {
        body = JSON.parse(raw);
      } catch (err) {
        if (response.ok)
          throw new AscError(
            'OTHER',
            `App Store Connect answered ${method} ${url.pathname} with something other than JSON.`,
            undefined,
            { cause: err },
          );
      }
    }
    if (!response.ok)
      throw appleError(
        response.status,
        body,
        key.keyId,
        parseRetryAfter(response.headers.get('retry-after'), clock()),
      );
    return body;
  }

  async function readCapped(response: Response): Promise<string> {
    const declared = Number(response.headers.get('content-length') ?? 0);
    if (declared > MAX_BODY_BYTES) {
      await response.body?.cancel();
      throw new AscError(
        'OTHER',
        `App Store Connect's answer (${declared} bytes) is larger than Sideport reads.`,
      );
    }
    const text = await response.text();
    if (text.length > MAX_BODY_BYTES)
      throw new AscError('OTHER', "App Store Connect's answer is larger than Sideport reads.");
    return text;
  }

  async function listAll<T>(
    path: string,
    query: Record<string, string | undefined>,
    parse: (body: unknown) => AscPage<T>,
  ): Promise<T[]> {
    const items: T[] = [];
    let next: string | undefined;
    let page = parse(await call('GET', path, { query: { ...query, limit: '200' } }));
    for (let pages = 1; ; pages++) {
      items.push(...page.data);
      next = page.next;
      if (next === undefined) return items;
      if (pages >= maxPages)
        throw new AscError(
          'OTHER',
          `App Store Connect's list at ${path} runs past ${maxPages} pages; Sideport stopped reading it.`,
        );
      page = parse(await call('GET', next));
    }
  }

  return { call, listAll };
}

/** Keys pasted into an environment variable often arrive with literal "\n" for line breaks. */
function normalizePem(pem: string): string {
  return pem.includes('\\n') ? pem.replace(/\\n/g, '\n') : pem;
}
