import { formatMoment } from '../../lib/dates';
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

/**
 * The query keys of the admin console, for whoever edits or refetches these caches (its panels
 * after an action, live updates): `all` matches every one of them.
 */
export const adminKeys = {
  all: ['admin'] as const,
  agents: ['admin', 'agents'] as const,
  queue: ['admin', 'queue'] as const,
  audit: ['admin', 'audit'] as const,
  devices: ['admin', 'devices'] as const,
  identity: ['admin', 'identity'] as const,
  accounts: ['admin', 'accounts'] as const,
  setup: ['admin', 'setup'] as const,
  setupLink: (token: string) => ['setup-link', token] as const,
};

export const agentsQuery = queryOptions({
  queryKey: adminKeys.agents,
  queryFn: async () => agentSummaries.parse(await api<unknown>('/api/admin/agents')),
  retry: false,
  // Last seen and current job move while agents work; nothing publishes them.
  refetchInterval: 15_000,
});

const nextPage = (last: { entries: unknown[] }, _all: unknown, lastParam: number) =>
  last.entries.length < ADMIN_PAGE_SIZE ? undefined : lastParam + 1;

/** Queue entries with attempts and last reason, failed ones last; live events keep it current. */
export const adminQueueQuery = infiniteQueryOptions({
  queryKey: adminKeys.queue,
  initialPageParam: 0,
  queryFn: async ({ pageParam }) => ({
    entries: adminQueuePage.parse(await api<unknown>(`/api/admin/queue/${pageParam}`)),
  }),
  getNextPageParam: nextPage,
  retry: false,
});

/** Who did what, newest first. */
export const auditQuery = infiniteQueryOptions({
  queryKey: adminKeys.audit,
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
  queryKey: adminKeys.devices,
  queryFn: async () => adminDevices.parse(await api<unknown>('/api/admin/devices')),
  retry: false,
  refetchInterval: 15_000,
});

/** The signing identity in use: the Apple developer account, or the dev identity. */
export const identityQuery = queryOptions({
  queryKey: adminKeys.identity,
  queryFn: async () => signingIdentityInfo.parse(await api<unknown>('/api/admin/identity')),
  retry: false,
});

/**
 * The pool of Apple developer accounts: each one's slots per device family and membership renewal.
 * Registrations move the counts and nothing publishes them, so this asks again now and then.
 */
export const accountsQuery = queryOptions({
  queryKey: adminKeys.accounts,
  queryFn: async () => developerAccounts.parse(await api<unknown>('/api/admin/accounts')),
  retry: false,
  refetchInterval: 15_000,
});

/** Times in the viewer's zone, to the minute. */
export const formatTime = (iso: string | null) => (iso ? formatMoment(iso) : 'never');

/** The setup checklist: what this server runs with, and the setting that completes each step. */
export const setupChecklistQuery = queryOptions({
  queryKey: adminKeys.setup,
  queryFn: async () => setupChecklist.parse(await api<unknown>('/api/admin/setup')),
  retry: false,
  // An agent coming online shows without a reload.
  refetchInterval: 30_000,
});

/** /setup/:token: whether the first admin's setup link is still good (asked once; its 4xx sentence is shown). */
export const setupLinkQuery = (token: string) =>
  queryOptions({
    queryKey: adminKeys.setupLink(token),
    queryFn: async () => {
      await api(`/api/setup/${encodeURIComponent(token)}`);
      return true;
    },
    retry: false,
    staleTime: Infinity,
  });
