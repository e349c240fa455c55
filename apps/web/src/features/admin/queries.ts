import { infiniteQueryOptions, queryOptions } from '@tanstack/react-query';
import { adminQueueEntry, agentSummary, auditEntry } from '@sideport/contracts';
import { api } from '../../lib/api';

/** The admin API answers pages of this many rows; a shorter page is the last. */
export const ADMIN_PAGE_SIZE = 50;

export const agentsQuery = queryOptions({
  queryKey: ['admin', 'agents'],
  queryFn: async () => agentSummary.array().parse(await api<unknown>('/api/admin/agents')),
  retry: false,
  // Last seen and current job move while agents work; nothing publishes them.
  refetchInterval: 15_000,
});

const nextPage = (last: { entries: unknown[] }, _all: unknown, lastParam: number) =>
  last.entries.length < ADMIN_PAGE_SIZE ? undefined : lastParam + 1;

/** Queue entries with attempts and last reason, failed ones last; live events keep it current. */
export const adminQueueQuery = infiniteQueryOptions({
  queryKey: ['admin', 'queue'],
  initialPageParam: 0,
  queryFn: async ({ pageParam }) => ({
    entries: adminQueueEntry.array().parse(await api<unknown>(`/api/admin/queue/${pageParam}`)),
  }),
  getNextPageParam: nextPage,
  retry: false,
});

/** Who did what, newest first. */
export const auditQuery = infiniteQueryOptions({
  queryKey: ['admin', 'audit'],
  initialPageParam: 0,
  queryFn: async ({ pageParam }) => ({
    entries: auditEntry.array().parse(await api<unknown>(`/api/admin/audit/${pageParam}`)),
  }),
  getNextPageParam: nextPage,
  retry: false,
});

/** Times in the viewer's zone, to the minute. */
export const formatTime = (iso: string | null) =>
  iso ? new Date(iso).toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'short' }) : 'never';
