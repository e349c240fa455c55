import { infiniteQueryOptions, queryOptions } from '@tanstack/react-query';
import { appList, appUpdates, queueStatus, type AppEntry } from '@sideport/contracts';
import { catalogKeys, updateKeys, type PagedList } from '../../entries/query-keys';
import { api, apiFetch } from '../../lib/api';

/** How often the queue asks whether an agent works it: agents come and go without an event. */
const QUEUE_STATUS_EVERY_MS = 30_000;

interface ListPage {
  entries: AppEntry[];
  /** X-List-Anchor of page 0: later pages are cut below it, so new entries do not shift them. */
  anchor: string | null;
}

/**
 * 'Latest decrypted' and 'Decrypt Queue': pages from 0; an empty page ends the list. The latest
 * list names the chosen country, so each version shows that store's record of its app (its name
 * there); the queue shows each request as it was made.
 */
export const listQuery = (list: PagedList, country: string) =>
  infiniteQueryOptions({
    queryKey: list === 'latest' ? [...catalogKeys.list(list), country] : catalogKeys.list(list),
    initialPageParam: 0,
    queryFn: async ({ pageParam, client, queryKey }): Promise<ListPage> => {
      const first =
        pageParam === 0 ? undefined : client.getQueryData<{ pages: ListPage[] }>(queryKey)?.pages[0];
      const query = new URLSearchParams();
      if (first?.anchor) query.set('anchor', first.anchor);
      if (list === 'latest') query.set('country', country);
      const search = query.size ? `?${query.toString()}` : '';
      const { data, headers } = await apiFetch(`/api/${list}/${pageParam}${search}`, appList);
      return { entries: data, anchor: headers.get('x-list-anchor') };
    },
    getNextPageParam: (last, _all, lastParam) => (last.entries.length === 0 ? undefined : lastParam + 1),
    retry: false,
  });

export const searchQuery = (country: string, keyword: string) =>
  queryOptions({
    queryKey: catalogKeys.search(country, keyword),
    queryFn: () => api(`/api/search/${country.toLowerCase()}/${encodeURIComponent(keyword)}`, appList),
    retry: false,
  });

/** Whether requests wait with no agent seen for minutes (the queue's notice). */
export const queueStatusQuery = queryOptions({
  queryKey: catalogKeys.queueStatus,
  queryFn: () => api('/api/queue-status', queueStatus),
  refetchInterval: QUEUE_STATUS_EVERY_MS,
  retry: false,
});

/**
 * GET /api/updates, the same cache as My page's Updates: a card of an app the person installed
 * shows a badge while the store has a newer version (live 'update' events refetch it).
 */
export const updatesBadgeQuery = (isLogin: boolean) =>
  queryOptions({
    queryKey: updateKeys.list,
    queryFn: () => api('/api/updates', appUpdates),
    enabled: isLogin,
    staleTime: 60_000,
  });
