import { navigationTokenAnswer } from '@sideport/contracts';
import { useClientStore } from './store';
import { currentPath, navigate } from './navigation';

export const RETRY_LATER = 'Please retry later.';

/**
 * Sent on every call: a browser that tells the server nothing of where a request comes from (no
 * Sec-Fetch-Site, no Origin: iOS Safari before 16.4) proves with it that the call is the site's
 * own, since another site cannot send it without a CORS preflight (docs/security.md, Cross-site requests).
 */
export const CLIENT_HEADER = { 'x-sideport-client': 'web' } as const;

/** A failed call: the server's sentence (text/plain) or nothing. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** True when the client already acted on it (a 401 sent the person to sign in). */
    readonly isHandled = false,
    /** What cures it, when the server says (`Sideport-Remedy`: 'sign-again' after a failed install preflight). */
    readonly remedy: string | null = null,
    /** How long the server asked to wait before trying again (`Retry-After` of a 503), in ms. */
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** Clears auth, remembers where the person was and sends them to sign in (docs/product.md, States and Errors). */
export function sendToSignIn() {
  const store = useClientStore.getState();
  store.signedOut();
  const here = currentPath();
  if (!here.startsWith('/sign-in') && !here.startsWith('/sign-up')) store.setLastPage(here);
  navigate('/sign-in');
}

/** For actions that need an account: alert 'Please Sign-in', keep the path, go to /sign-in. */
export function requireSignIn(): boolean {
  if (useClientStore.getState().isLogin) return true;
  window.alert('Please Sign-in');
  sendToSignIn();
  return false;
}

/**
 * What reads an answer: a zod schema of packages/contracts (only its `parse` is used). Every call
 * names one, so no answer reaches the app unchecked; a 204 is read as `noContent`.
 */
export interface AnswerSchema<T> {
  parse(data: unknown): T;
}

export interface ApiResponse<T> {
  data: T;
  headers: Headers;
}

/**
 * The one way the web app calls the API: credentials included, JSON in and out, the answer parsed
 * with the contract's schema the call names; any 401 signs the
 * client out and goes to /sign-in; other failures throw ApiError with the server's sentence.
 */
export interface ApiInit {
  method?: string;
  body?: unknown;
  /** Sign-in and sign-up: their 401 means wrong credentials, shown as the server says. */
  isAuthAttempt?: boolean;
}

/** The server's errors are short text/plain sentences; any other body (a proxy's HTML page) is not shown. */
async function serverSentence(response: Response): Promise<string> {
  if (!(response.headers.get('content-type') ?? '').startsWith('text/plain')) return '';
  const text = (await response.text().catch(() => '')).trim();
  return text.length > 300 ? '' : text;
}

export async function apiFetch<T>(
  path: string,
  schema: AnswerSchema<T>,
  init: ApiInit = {},
): Promise<ApiResponse<T>> {
  const wasSignedIn = useClientStore.getState().isLogin;
  let response: Response;
  try {
    response = await fetch(path, {
      method: init.method ?? 'GET',
      credentials: 'include',
      headers:
        init.body === undefined
          ? { ...CLIENT_HEADER }
          : { ...CLIENT_HEADER, 'content-type': 'application/json' },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
  } catch {
    throw new ApiError(0, '');
  }
  if (response.status === 401 && !init.isAuthAttempt) {
    // A call sent before the person signed out answers 401 after it: the sign-out already chose
    // where to go and reset last_page, so this late answer must not store the page or move.
    const signedOutMeanwhile = wasSignedIn && !useClientStore.getState().isLogin;
    if (!signedOutMeanwhile) sendToSignIn();
    throw new ApiError(401, '', true);
  }
  if (!response.ok) {
    throw new ApiError(
      response.status,
      await serverSentence(response),
      false,
      response.headers.get('sideport-remedy'),
      retryAfterMsOf(response.headers.get('retry-after')),
    );
  }
  const type = response.headers.get('content-type') ?? '';
  const data: unknown = type.includes('application/json') ? await response.json() : undefined;
  return { data: schema.parse(data), headers: response.headers };
}

/** `Retry-After` in delay-seconds (what the server sends), in ms; null when absent or not a number. */
function retryAfterMsOf(value: string | null): number | null {
  return value !== null && /^\d+$/.test(value.trim()) ? Number(value.trim()) * 1000 : null;
}

/** Reads that fail: tried 3 more times, as before; a 503 (a part of the server is away) after its Retry-After. */
const MAX_READ_RETRIES = 3;
/** A Retry-After longer than this is not waited out by an open page: it shows the sentence and its Retry button. */
const MAX_RETRY_WAIT_MS = 30_000;

/** TanStack Query's `retry` for reads: never after a 4xx (the answer will not change), else up to 3 times. */
export function shouldRetryRead(failureCount: number, error: unknown): boolean {
  if (error instanceof ApiError && error.status >= 400 && error.status < 500) return false;
  if (error instanceof ApiError && (error.retryAfterMs ?? 0) > MAX_RETRY_WAIT_MS) return false;
  return failureCount < MAX_READ_RETRIES;
}

/** TanStack Query's `retryDelay`: the server's Retry-After when it gave one, else 1 s, 2 s, 4 s. */
export function readRetryDelayMs(failureCount: number, error: unknown): number {
  if (error instanceof ApiError && error.retryAfterMs !== null) return error.retryAfterMs;
  return Math.min(1000 * 2 ** failureCount, MAX_RETRY_WAIT_MS);
}

export const api = async <T>(path: string, schema: AnswerSchema<T>, init?: ApiInit) =>
  (await apiFetch(path, schema, init)).data;

/**
 * Opens an API path that changes state as a navigation (the enrollment profile's download), which
 * cannot carry CLIENT_HEADER: asks for a one-time token of the signed-in person for that path
 * first, and opens the path with it. Failures throw as api's do.
 */
export async function openWithToken(path: string) {
  const { token } = await api('/api/navigation-tokens', navigationTokenAnswer, {
    method: 'POST',
    body: { path },
  });
  window.location.assign(`${path}?nav_token=${encodeURIComponent(token)}`);
}

/** The sentence a failure shows: the server's, or 'Please retry later.'; null for a 401 already handled. */
export function failureSentence(error: unknown): string | null {
  if (error instanceof ApiError && error.isHandled) return null;
  return error instanceof ApiError && error.message ? error.message : RETRY_LATER;
}

/** docs/product.md, Errors: show the server's sentence, or 'Please retry later.'; a 401 was already handled. */
export function alertFailure(error: unknown) {
  const message = failureSentence(error);
  if (message !== null) window.alert(message);
}
