import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  alertFailure,
  api,
  ApiError,
  openWithToken,
  readRetryDelayMs,
  RETRY_LATER,
  shouldRetryRead,
} from './api';
import { setNavigate } from './navigation';
import { useClientStore } from './store';

// The store persists to localStorage, which node lacks: a memory one, in place before the store exists.
const saved = vi.hoisted(() => {
  const items = new Map<string, string>();
  globalThis.localStorage = {
    getItem: (key: string) => items.get(key) ?? null,
    setItem: (key: string, value: string) => void items.set(key, value),
    removeItem: (key: string) => void items.delete(key),
  } as Storage;
  return items;
});

/** These tests are about the call, not the answer's shape: any answer is taken as it is. */
const anyAnswer = { parse: (data: unknown) => data };

const answer = (status: number, body: string, type: string) =>
  vi.fn(async () => new Response(body, { status, headers: { 'content-type': type } }));

let alerts: string[];
let visited: string[];

beforeEach(() => {
  alerts = [];
  visited = [];
  vi.stubGlobal('window', {
    location: { pathname: '/my', search: '?tab=device' },
    alert: (message: string) => alerts.push(message),
  });
  setNavigate((path) => visited.push(path));
  useClientStore.setState({ isLogin: true, grade: 2, last_page: '/', country: 'DE' });
});
afterEach(() => vi.unstubAllGlobals());

const failureOf = async (call: Promise<unknown>) => {
  const error = await call.then(
    () => null,
    (e: unknown) => e,
  );
  alertFailure(error);
  return error;
};

describe('api failures', () => {
  it("alerts the server's text/plain sentence", async () => {
    vi.stubGlobal('fetch', answer(409, 'This id is already taken.', 'text/plain; charset=utf-8'));
    await failureOf(api('/api/sign-up', anyAnswer, { method: 'POST', body: {}, isAuthAttempt: true }));
    expect(alerts).toEqual(['This id is already taken.']);
  });

  it('carries what cures it when the server says (Sideport-Remedy), beside the sentence', async () => {
    const sentence =
      'The certificate that signed this app was revoked by Apple on 2026-03-01; it is being signed again.';
    vi.stubGlobal(
      'fetch',
      vi.fn(
        async () =>
          new Response(sentence, {
            status: 409,
            headers: { 'content-type': 'text/plain; charset=utf-8', 'sideport-remedy': 'sign-again' },
          }),
      ),
    );
    const error = (await api('/api/check/sign/1/2/0', anyAnswer).catch((e: unknown) => e)) as ApiError;
    expect([error.status, error.message, error.remedy]).toEqual([409, sentence, 'sign-again']);
    vi.stubGlobal('fetch', answer(409, 'This id is already taken.', 'text/plain'));
    expect(((await api('/api/sign-up', anyAnswer).catch((e: unknown) => e)) as ApiError).remedy).toBeNull();
  });

  it("alerts 'Please retry later.' for an empty or non-text body, or no answer at all", async () => {
    vi.stubGlobal('fetch', answer(500, '', 'text/plain'));
    await failureOf(api('/api/info', anyAnswer));
    vi.stubGlobal('fetch', answer(502, '<html>Bad gateway</html>', 'text/html'));
    await failureOf(api('/api/info', anyAnswer));
    vi.stubGlobal(
      'fetch',
      vi.fn(async () => Promise.reject(new TypeError('offline'))),
    );
    await failureOf(api('/api/info', anyAnswer));
    expect(alerts).toEqual([RETRY_LATER, RETRY_LATER, RETRY_LATER]);
  });

  it('signs out on any 401, keeps the path and country, goes to /sign-in without an alert', async () => {
    vi.stubGlobal('fetch', answer(401, 'Please sign in.', 'text/plain'));
    const error = await failureOf(api('/api/info', anyAnswer));
    expect(error).toBeInstanceOf(ApiError);
    expect(useClientStore.getState()).toMatchObject({
      isLogin: false,
      grade: -1,
      last_page: '/my?tab=device',
      country: 'DE',
    });
    expect(JSON.parse(saved.get('sideport') ?? '{}').state).toEqual({
      isLogin: false,
      grade: -1,
      last_page: '/my?tab=device',
      country: 'DE',
    });
    expect(visited).toEqual(['/sign-in']);
    expect(alerts).toEqual([]);
  });

  it('leaves the 401 of a sign-in attempt to the form, as the sentence to show', async () => {
    vi.stubGlobal('fetch', answer(401, 'The id or password is not correct.', 'text/plain'));
    await failureOf(api('/api/sign-in', anyAnswer, { method: 'POST', body: {}, isAuthAttempt: true }));
    expect(alerts).toEqual(['The id or password is not correct.']);
    expect(visited).toEqual([]);
    expect(useClientStore.getState().isLogin).toBe(true);
  });
});

describe("proving a call is the site's own (docs/security.md, Cross-site requests)", () => {
  it('sends X-Sideport-Client: web on every call, with a body or without', async () => {
    const fetch = answer(200, '{}', 'application/json');
    vi.stubGlobal('fetch', fetch);
    await api('/api/decrypt/KR/1', anyAnswer);
    await api('/api/sign/1/2', anyAnswer, { method: 'PUT', body: { type: 0 } });
    const sent = fetch.mock.calls.map((call) => (call as unknown as [string, RequestInit])[1].headers);
    expect(sent).toEqual([
      { 'x-sideport-client': 'web' },
      { 'x-sideport-client': 'web', 'content-type': 'application/json' },
    ]);
  });

  it('asks for a one-time token before it opens a navigation, and opens the path with it', async () => {
    const opened: string[] = [];
    vi.stubGlobal('window', {
      location: { pathname: '/udid', search: '', assign: (url: string) => opened.push(url) },
    });
    const fetch = answer(
      200,
      JSON.stringify({ token: 'a+b/c', expires_at: '2026-11-27T10:01:00.000Z' }),
      'application/json',
    );
    vi.stubGlobal('fetch', fetch);
    await openWithToken('/api/udid/profile');
    const [url, init] = fetch.mock.calls[0] as unknown as [string, RequestInit];
    expect(url).toBe('/api/navigation-tokens');
    expect(init.method).toBe('POST');
    expect(JSON.parse(String(init.body))).toEqual({ path: '/api/udid/profile' });
    expect(opened).toEqual(['/api/udid/profile?nav_token=a%2Bb%2Fc']);
  });

  it('opens nothing when the token is refused, and says why', async () => {
    const opened: string[] = [];
    vi.stubGlobal('window', {
      location: { pathname: '/udid', search: '', assign: (url: string) => opened.push(url) },
      alert: (message: string) => alerts.push(message),
    });
    vi.stubGlobal('fetch', answer(403, 'Cross-site requests are not allowed.', 'text/plain; charset=utf-8'));
    await failureOf(openWithToken('/api/udid/profile'));
    expect(opened).toEqual([]);
    expect(alerts).toEqual(['Cross-site requests are not allowed.']);
  });
});

describe('reads while a part of the server is away', () => {
  it("tries a 503 again after the server's Retry-After, keeps its sentence, and never retries a 4xx", async () => {
    vi.stubGlobal(
      'fetch',
      vi.fn(
        async () =>
          new Response('The database is not answering right now. Please retry in a few seconds.', {
            status: 503,
            headers: { 'content-type': 'text/plain; charset=utf-8', 'retry-after': '5' },
          }),
      ),
    );
    const error = await failureOf(api('/api/info', anyAnswer));
    expect(error).toMatchObject({ status: 503, retryAfterMs: 5000 });
    expect(alerts).toEqual(['The database is not answering right now. Please retry in a few seconds.']);
    expect(shouldRetryRead(0, error)).toBe(true);
    expect(readRetryDelayMs(0, error)).toBe(5000);
    expect(shouldRetryRead(3, error)).toBe(false);
    // A wait longer than a page should hold (a full disk's 300 s) is left to the person's Retry.
    expect(shouldRetryRead(0, new ApiError(503, 'The disk is full.', false, null, 300_000))).toBe(false);
    expect(shouldRetryRead(0, new ApiError(404, 'This version is no longer available.'))).toBe(false);
    expect(readRetryDelayMs(1, new ApiError(0, ''))).toBe(2000);
  });
});
