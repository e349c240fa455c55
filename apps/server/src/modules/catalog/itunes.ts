import { z } from 'zod';
import { fail, failWith } from '../../platform/errors.js';

/** One iOS app as the iTunes Search/Lookup APIs describe it, mapped to our names. */
export interface StoreApp {
  appId: number;
  name: string;
  developer: string;
  version: string;
  iconUrl: string;
  storeUrl: string;
  rating: number | null;
  ratingCount: number | null;
  bundleId: string;
  minimumOs: string;
  sizeBytes: number | null;
  price: number | null;
}

export interface ItunesClientOptions {
  baseUrl: string;
  timeoutMs: number;
  searchLimit: number;
  clock?: () => number;
  fetchImpl?: typeof fetch;
}

/** Throttled: the client is told how long the block lasts (Retry-After, whole seconds). */
const storeBusy = (retryAfterMs: number) =>
  failWith('STORE_THROTTLED', {
    headers: { 'retry-after': String(Math.max(1, Math.ceil(retryAfterMs / 1000))) },
  });
const storeTimeout = () => fail('STORE_TIMEOUT');
/** No answer at all (refused, unknown host, reset): not the same as the store answering with an error. */
const storeUnreachable = (cause: unknown) => failWith('STORE_UNREACHABLE', { cause });
const storeError = (cause?: unknown) => failWith('STORE_ERROR', { cause });
/** A 5xx: the store's own outage, which passes; its Retry-After is passed on when it gives one. */
const storeUnavailable = (status: number, retryAfter: string | null) =>
  failWith('STORE_UNAVAILABLE', {
    cause: new Error(`HTTP ${status}`),
    ...(retryAfter && /^\d+$/.test(retryAfter.trim())
      ? { headers: { 'retry-after': retryAfter.trim() } }
      : {}),
  });

// Lenient per-field parsing: a missing rating or size must not drop the app, only odd records are skipped.
const optionalNumber = z
  .preprocess((v) => (typeof v === 'string' && v.trim() !== '' ? Number(v) : v), z.number().finite())
  .optional()
  .catch(undefined);
const text = z.string().catch('');
const storeRecord = z.object({
  wrapperType: z.string().optional().catch(undefined),
  kind: z.string().optional().catch(undefined),
  trackId: z.number().int().positive(),
  trackName: z.string().min(1),
  artistName: text,
  sellerName: text,
  version: text,
  artworkUrl512: text,
  artworkUrl100: text,
  trackViewUrl: text,
  averageUserRating: optionalNumber,
  userRatingCount: optionalNumber,
  bundleId: text,
  minimumOsVersion: text,
  fileSizeBytes: optionalNumber,
  price: optionalNumber,
});
const envelope = z.object({ resultCount: z.number().int().nonnegative(), results: z.array(z.unknown()) });

/** iPhone and iPad apps are kind "software"; Mac apps ("mac-software") and anything else are dropped. */
export function toStoreApps(body: unknown): StoreApp[] {
  const parsed = envelope.safeParse(body);
  if (!parsed.success) throw storeError(parsed.error);
  const apps: StoreApp[] = [];
  for (const raw of parsed.data.results) {
    const r = storeRecord.safeParse(raw);
    if (!r.success || r.data.kind !== 'software') continue;
    const d = r.data;
    apps.push({
      appId: d.trackId,
      name: d.trackName,
      developer: d.artistName || d.sellerName,
      version: d.version,
      iconUrl: d.artworkUrl512 || d.artworkUrl100,
      storeUrl: d.trackViewUrl,
      rating: d.averageUserRating ?? null,
      ratingCount: d.userRatingCount !== undefined ? Math.trunc(d.userRatingCount) : null,
      bundleId: d.bundleId,
      minimumOs: d.minimumOsVersion,
      sizeBytes: d.fileSizeBytes ?? null,
      price: d.price ?? null,
    });
  }
  return apps;
}

/**
 * Client of the iTunes Search and Lookup APIs. Every call is bounded by a timeout; a 403/429
 * (Apple's throttling) blocks further calls for a back-off period that doubles while it repeats,
 * so a throttled store is not hammered.
 */
export function createItunesClient(options: ItunesClientOptions) {
  const clock = options.clock ?? Date.now;
  const doFetch = options.fetchImpl ?? fetch;
  let blockedUntil = 0;
  let backoffMs = 0;

  async function get(path: string, params: Record<string, string>): Promise<StoreApp[]> {
    if (clock() < blockedUntil) throw storeBusy(blockedUntil - clock());
    const url = new URL(path, options.baseUrl.endsWith('/') ? options.baseUrl : `${options.baseUrl}/`);
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
    let response: Response;
    let body: string;
    try {
      response = await doFetch(url, { signal: AbortSignal.timeout(options.timeoutMs) });
      body = await response.text();
    } catch (err) {
      const name = (err as Error).name;
      throw name === 'TimeoutError' || name === 'AbortError' ? storeTimeout() : storeUnreachable(err);
    }
    if (response.status === 403 || response.status === 429) {
      const retryAfterS = Number(response.headers.get('retry-after'));
      backoffMs = Math.min(Math.max(backoffMs * 2, 30_000), 600_000);
      blockedUntil = clock() + (retryAfterS > 0 ? retryAfterS * 1000 : backoffMs);
      throw storeBusy(blockedUntil - clock());
    }
    if (response.status >= 500) throw storeUnavailable(response.status, response.headers.get('retry-after'));
    if (!response.ok) throw storeError(new Error(`HTTP ${response.status}`));
    backoffMs = 0;
    let json: unknown;
    try {
      json = JSON.parse(body);
    } catch (err) {
      throw storeError(err);
    }
    return toStoreApps(json);
  }

  return {
    search: (country: string, term: string) =>
      get('search', {
        term,
        country: country.toLowerCase(),
        entity: 'software',
        limit: String(options.searchLimit),
      }),
    lookup: (country: string, appId: number) =>
      get('lookup', { id: String(appId), country: country.toLowerCase() }),
    /** Several apps of one storefront in one call (Lookup takes ids comma-separated): the update check's batches. */
    lookupMany: (country: string, appIds: readonly number[]) =>
      get('lookup', { id: appIds.join(','), country: country.toLowerCase() }),
    lookupBundle: (country: string, bundleId: string) =>
      get('lookup', { bundleId, country: country.toLowerCase() }),
  };
}

export type ItunesClient = ReturnType<typeof createItunesClient>;
