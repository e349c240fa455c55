import { infiniteQueryOptions, queryOptions } from '@tanstack/react-query';
import {
  adminDevices,
  adminQueuePage,
  agentSummaries,
  auditPage,
  developerAccounts,
  setupChecklist,
  signingIdentityInfo,
} from '@sideport/contracts';
import { api } from '../../lib/api';

/** The admin API answers pages of this many rows; a shorter page is the last. */
export const ADMIN_PAGE_SIZE = 50;

export const agentsQuery = queryOptions({
  queryKey: ['admin', 'agents'],
  queryFn: async () => agentSummaries.parse(await api<unknown>('/api/admin/agents')),
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
    entries: adminQueuePage.parse(await api<unknown>(`/api/admin/queue/${pageParam}`)),
  }),
  getNextPageParam: nextPage,
  retry: false,
});

/** Who did what, newest first. */
export const auditQuery = infiniteQueryOptions({
  queryKey: ['admin', 'audit'],
  initialPageParam: 0,
  queryFn: async ({ pageParam }) => ({
    entries: auditPage.parse(await api<unknown>(`/api/admin/audit/${pageParam}`)),
  }),
  getNextPageParam: nextPage,
  retry: false,
});

/**
 * Devices waiting for registration: paid ones Pending (with Apple's reason when an attempt failed)
 * and Macs in Process for a confirmation. Device events go to their owners only, so this asks again
 * now and then, and after each action here.
 */
export const adminDevicesQuery = queryOptions({
  queryKey: ['admin', 'devices'],
  queryFn: async () => adminDevices.parse(await api<unknown>('/api/admin/devices')),
  retry: false,
  refetchInterval: 15_000,
});

/** The signing identity in use: the Apple developer account, or the dev identity. */
export const identityQuery = queryOptions({
  queryKey: ['admin', 'identity'],
  queryFn: async () => signingIdentityInfo.parse(await api<unknown>('/api/admin/identity')),
  retry: false,
});

/**
 * The pool of Apple developer accounts: each one's slots per device family and membership renewal.
 * Registrations move the counts and nothing publishes them, so this asks again now and then.
 */
export const accountsQuery = queryOptions({
  queryKey: ['admin', 'accounts'],
  queryFn: async () => developerAccounts.parse(await api<unknown>('/api/admin/accounts')),
  retry: false,
  refetchInterval: 15_000,
});

/** Times in the viewer's zone, to the minute. */
export const formatTime = (iso: string | null) =>
  iso ? new Date(iso).toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'short' }) : 'never';

/** The setup checklist: what this server runs with, and the setting that completes each step. */
export const setupChecklistQuery = queryOptions({
  queryKey: ['admin', 'setup'],
  queryFn: async () => setupChecklist.parse(await api<unknown>('/api/admin/setup')),
  retry: false,
  // An agent coming online shows without a reload.
  refetchInterval: 30_000,
});
