import { LRUCache } from 'lru-cache';

type Compute<V> = () => Promise<V>;

/**
 * A short-lived, per-process cache of computed answers. Concurrent misses of one key share a single
 * computation (lru-cache's fetch coalesces them), so a burst of identical requests costs one query.
 * Staleness is bounded by ttlMs; writes (and the changes every process hears of) call clear(). ttlMs 0 turns it off.
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
  // clear() starts a new generation rather than emptying the cache: a computation under way (which
  // may have read the data before the change) is neither reused nor aborted under its callers.
  let generation = 0;
  return {
    get: async (key: string, compute: Compute<V>): Promise<V> =>
      (await cache.fetch(`${generation}:${key}`, { context: compute }))!,
    clear: () => {
      generation += 1;
    },
  };
}

export type MicroCache<V extends object> = ReturnType<typeof createMicroCache<V>>;
