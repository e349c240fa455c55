import { LRUCache } from 'lru-cache';

type Compute<V> = () => Promise<V>;

/**
 * A short-lived, per-process cache of computed answers. Concurrent misses of one key share a single
 * computation (lru-cache's fetch coalesces them), so a burst of identical requests costs one query.
 * Staleness is bounded by ttlMs across processes; local writes call clear(). ttlMs 0 turns it off.
 */
export function createMicroCache<V extends object>(options: { ttlMs: number; max: number }) {
  if (options.ttlMs <= 0) {
    return { get: (_key: string, compute: Compute<V>) => compute(), clear: () => {} };
  }
  const cache = new LRUCache<string, V, Compute<V>>({
    max: options.max,
    ttl: options.ttlMs,
    fetchMethod: (_key, _stale, { context }) => context(),
  });
  return {
    get: async (key: string, compute: Compute<V>): Promise<V> =>
      (await cache.fetch(key, { context: compute }))!,
    clear: () => cache.clear(),
  };
}

export type MicroCache<V extends object> = ReturnType<typeof createMicroCache<V>>;
