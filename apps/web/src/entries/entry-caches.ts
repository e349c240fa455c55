import { matchQuery, type InfiniteData, type QueryClient, type QueryKey } from '@tanstack/react-query';
import { adminKeys, catalogKeys, versionKeys } from './query-keys';

/** What every cached entry of an app carries: lists, search, version lists and the admin queue. */
export interface CachedEntry {
  country: string;
  app_id: string;
  app_ver_id: string | null;
  status: string;
}

/** The caches that hold entries; `versions` and `history` are one per app (versionKeys in query-keys.ts). */
export type EntryCache = 'latest' | 'queue' | 'search' | 'versions' | 'history' | 'admin-queue';

/** How to change one cached query: map its entries (null drops one), refetch it, or both. */
export interface EntryEdit {
  /** Gets each entry as cached (all its fields) and returns it changed, the same, or null. */
  map?: (entry: CachedEntry) => CachedEntry | null;
  refetch?: boolean;
}

type Mapper = (entries: CachedEntry[]) => CachedEntry[];
type Paged = InfiniteData<{ entries: CachedEntry[] }>;
interface Shape {
  key: QueryKey;
  read(data: unknown): CachedEntry[];
  write(data: unknown, mapper: Mapper): unknown;
}

const paged = (key: QueryKey): Shape => ({
  key,
  read: (data) => (data as Paged).pages.flatMap((p) => p.entries),
  write: (data, mapper) => {
    const d = data as Paged;
    return { ...d, pages: d.pages.map((p) => ({ ...p, entries: mapper(p.entries) })) };
  },
});
const plain = (key: QueryKey): Shape => ({
  key,
  read: (data) => data as CachedEntry[],
  write: (data, mapper) => mapper(data as CachedEntry[]),
});

const SHAPES: Record<EntryCache, Shape> = {
  latest: paged(catalogKeys.list('latest')),
  queue: paged(catalogKeys.list('queue')),
  'admin-queue': paged(adminKeys.queue),
  search: plain(catalogKeys.searches),
  versions: plain(versionKeys.lists),
  history: {
    key: versionKeys.histories,
    read: (data) => (data as { version_list: CachedEntry[] }).version_list,
    write: (data, mapper) => {
      const d = data as { version_list: CachedEntry[] };
      return { ...d, version_list: mapper(d.version_list) };
    },
  },
};

/**
 * Visits every loaded query that holds entries and applies what `edit` decides for it. Entries are
 * changed in place (TanStack Query's setQueryData), so open pages and the version modal follow
 * without a refetch; `refetch` marks the query stale and refetches it when it is shown.
 */
export function editEntryCaches(
  queryClient: QueryClient,
  edit: (cache: EntryCache, entries: readonly CachedEntry[], key: QueryKey) => EntryEdit | undefined,
  /** Only this query (exact key), as it lands from the server. */
  only?: QueryKey,
) {
  for (const [cache, shape] of Object.entries(SHAPES) as Array<[EntryCache, Shape]>) {
    const queries = queryClient
      .getQueryCache()
      .findAll(only ? { queryKey: only, exact: true } : { queryKey: shape.key });
    for (const query of queries) {
      if (only && !matchQuery({ queryKey: shape.key }, query)) continue;
      const data = query.state.data;
      if (data === undefined) continue;
      const change = edit(cache, shape.read(data), query.queryKey);
      const { map } = change ?? {};
      if (map) {
        const mapper: Mapper = (entries) => entries.flatMap((e) => map(e) ?? []);
        queryClient.setQueryData(query.queryKey, shape.write(data, mapper));
      }
      if (change?.refetch) void queryClient.invalidateQueries({ queryKey: query.queryKey, exact: true });
    }
  }
}
