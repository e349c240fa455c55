/**
 * The site as the chaos run's users reach it: two API processes, either of which may be dead at a
 * given moment. Each call goes to one at random and, when it cannot be reached (or answers 5xx
 * while dying), to the other, as a load balancer with health checks would send it.
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';

export const md5 = (text: string) => createHash('md5').update(text).digest('hex');

export interface CallOptions {
  method?: string;
  cookie?: string;
  json?: unknown;
  body?: Uint8Array<ArrayBuffer>;
  contentType?: string;
  /** More headers (a webhook's signature). */
  headers?: Record<string, string>;
  /** How long to keep trying before giving up (an API restarts in seconds). */
  patienceMs?: number;
}

/**
 * What the site answered that was not the work's own answer: a 503 with a sentence and
 * Retry-After (a part away, a process draining) is what a user may read and the web app retries;
 * any other 5xx (or a 503 without them) is a finding; a process that could not be reached is what
 * a load balancer hides by sending the call elsewhere.
 */
export interface Tally {
  refusedWithSentence: number;
  withoutSentence: string[];
  unreachable: number;
}

export function createSite(origins: string[]) {
  const tally: Tally = { refusedWithSentence: 0, withoutSentence: [], unreachable: 0 };
  async function call(pathname: string, options: CallOptions = {}): Promise<Response> {
    const deadline = Date.now() + (options.patienceMs ?? 90_000);
    let last = '';
    for (let attempt = 0; ; attempt++) {
      const origin = origins[(attempt + Math.floor(Math.random() * origins.length)) % origins.length]!;
      try {
        const res = await fetch(new URL(pathname, origin), {
          method: options.method ?? 'GET',
          redirect: 'manual',
          signal: AbortSignal.timeout(30_000),
          headers: {
            // The site's own pages send this; the server refuses API calls without it.
            'sec-fetch-site': 'same-origin',
            ...(options.cookie ? { cookie: options.cookie } : {}),
            ...(options.json !== undefined ? { 'content-type': 'application/json' } : {}),
            ...(options.contentType ? { 'content-type': options.contentType } : {}),
            ...options.headers,
          },
          ...(options.json !== undefined ? { body: JSON.stringify(options.json) } : {}),
          ...(options.body ? { body: options.body } : {}),
        });
        if (res.status < 500) return res;
        const text = await res.text();
        last = `${res.status} ${text}`;
        const isSentence =
          res.status === 503 &&
          res.headers.get('retry-after') !== null &&
          res.headers.get('content-type')?.startsWith('text/plain') === true &&
          /^[A-Z].*\.$/.test(text.trim());
        if (isSentence) tally.refusedWithSentence++;
        else tally.withoutSentence.push(`${options.method ?? 'GET'} ${pathname}: ${last}`);
      } catch (err) {
        last = (err as Error).message;
        tally.unreachable++;
      }
      if (Date.now() > deadline)
        throw new Error(`${options.method ?? 'GET'} ${pathname}: no API answered (${last})`);
      await sleep(250);
    }
  }

  /** A call that must answer `status`; its body as JSON when there is one. */
  async function expect<T = unknown>(
    status: number,
    pathname: string,
    options: CallOptions = {},
  ): Promise<T> {
    const res = await call(pathname, options);
    const text = await res.text();
    if (res.status !== status)
      throw new Error(`${options.method ?? 'GET'} ${pathname}: ${res.status} ${text}`);
    return (text && res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text) as T;
  }

  /** Signs up (or in) and answers the session cookie. */
  async function session(id: string, password: string, signUp: boolean): Promise<string> {
    const res = await call(signUp ? '/api/sign-up' : '/api/sign-in', {
      method: 'POST',
      json: { id, pw: md5(password) },
    });
    if (res.status !== 200)
      throw new Error(`${signUp ? 'sign-up' : 'sign-in'} of ${id}: ${res.status} ${await res.text()}`);
    return res.headers.getSetCookie()[0]!.split(';')[0]!;
  }

  /**
   * Fetches a URL the server handed out: a presigned S3 URL as it is, one of the server's own on
   * whichever API answers.
   */
  async function download(url: string): Promise<Buffer> {
    const parsed = new URL(url);
    if (origins.includes(parsed.origin)) {
      const res = await call(`${parsed.pathname}${parsed.search}`);
      if (res.status !== 200) throw new Error(`GET ${parsed.pathname}: ${res.status}`);
      return Buffer.from(await res.arrayBuffer());
    }
    const res = await fetch(url, { signal: AbortSignal.timeout(60_000) });
    if (res.status !== 200) throw new Error(`GET ${url}: ${res.status}`);
    return Buffer.from(await res.arrayBuffer());
  }

  return { call, expect, session, download, tally };
}

export type Site = ReturnType<typeof createSite>;
