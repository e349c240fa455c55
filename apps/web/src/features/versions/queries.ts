import { queryOptions } from '@tanstack/react-query';
import { appList, versionHistoryAnswer, type AppEntry } from '@sideport/contracts';
import { api } from '../../lib/api';

/** An entry as the client holds it: live events add the working agent's progress (0-100). */
export type LiveEntry = AppEntry & { progress?: number | null };

/**
 * The query keys of the version modal, for whoever edits or refetches these caches (live updates):
 * `lists` and `histories` match every app's.
 */
export const versionKeys = {
  lists: ['versions'] as const,
  list: (country: string, appId: string) => ['versions', country, appId] as const,
  histories: ['version-history'] as const,
  history: (country: string, appId: string) => ['version-history', country, appId] as const,
};

/** View: the versions Sideport knows of an app, newest first (GET /api/version). */
export const versionsQuery = (country: string, appId: string) =>
  queryOptions({
    queryKey: versionKeys.list(country, appId),
    queryFn: async (): Promise<LiveEntry[]> =>
      appList.parse(await api<unknown>(`/api/version/${country}/${appId}`)),
    retry: false,
    staleTime: 0,
  });

/**
 * Downgrade: the store's version history (POST /api/version, premium), never-requested versions
 * Available. The server may wait for an agent's answer, so it is asked once per opening of the
 * modal and kept current by live events, never refetched behind the person's back.
 */
export const historyQuery = (country: string, appId: string) =>
  queryOptions({
    queryKey: versionKeys.history(country, appId),
    queryFn: async (): Promise<{ name: string; version_list: LiveEntry[] }> =>
      versionHistoryAnswer.parse(await api<unknown>(`/api/version/${country}/${appId}`, { method: 'POST' })),
    retry: false,
    staleTime: Infinity,
    gcTime: 0,
  });
