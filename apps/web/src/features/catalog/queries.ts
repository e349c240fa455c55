import { infiniteQueryOptions, queryOptions } from '@tanstack/react-query';
import { appList, type AppEntry } from '@sideport/contracts';
import { api, apiFetch } from '../../lib/api';

export type PagedList = 'latest' | 'queue';

interface ListPage {
  entries: AppEntry[];
  /** X-List-Anchor of page 0: later pages are cut below it, so new entries do not shift them. */
  anchor: string | null;
}

/** 'Latest decrypted' and 'Decrypt Queue': pages from 0; an empty page ends the list. */
export const listQuery = (list: PagedList) =>
  infiniteQueryOptions({
    queryKey: ['list', list],
    initialPageParam: 0,
    queryFn: async ({ pageParam, client }): Promise<ListPage> => {
      const first =
        pageParam === 0 ? undefined : client.getQueryData<{ pages: ListPage[] }>(['list', list])?.pages[0];
      const anchor = first?.anchor ? `?anchor=${encodeURIComponent(first.anchor)}` : '';
      const { data, headers } = await apiFetch<unknown>(`/api/${list}/${pageParam}${anchor}`);
      return { entries: appList.parse(data), anchor: headers.get('x-list-anchor') };
    },
    getNextPageParam: (last, _all, lastParam) => (last.entries.length === 0 ? undefined : lastParam + 1),
    retry: false,
  });

export const searchQuery = (country: string, keyword: string) =>
  queryOptions({
    queryKey: ['search', country, keyword],
    queryFn: async () =>
      appList.parse(
        await api<unknown>(`/api/search/${country.toLowerCase()}/${encodeURIComponent(keyword)}`),
      ),
    retry: false,
  });
