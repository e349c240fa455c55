import { formatMoment } from '../../lib/dates';
import { infiniteQueryOptions, queryOptions } from '@tanstack/react-query';
import {
  adminCapabilities,
  adminCopyAppIds,
  adminDevice,
  adminDevices,
  adminQueuePage,
  agentSummaries,
  auditPage,
  createdAgent,
  developerAccount,
  developerAccounts,
  gradeAnswer,
  noContent,
  setupChecklist,
  signingIdentityInfo,
  updateCheckResult,
  updatesOverview,
  type AddDeveloperAccountRequest,
  type Credentials,
} from '@sideport/contracts';
import { adminKeys } from '../../entries/query-keys';
import { api } from '../../lib/api';

/** The admin API answers pages of this many rows; a shorter page is the last. */
export const ADMIN_PAGE_SIZE = 50;

export const agentsQuery = queryOptions({
  queryKey: adminKeys.agents,
  queryFn: () => api('/api/admin/agents', agentSummaries),
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
    entries: await api(`/api/admin/queue/${pageParam}`, adminQueuePage),
  }),
  getNextPageParam: nextPage,
  retry: false,
});

/** What signing loses of the newest Done versions, with what the operator could do (issue 30). */
export const capabilitiesQuery = queryOptions({
  queryKey: adminKeys.capabilities,
  queryFn: () => api('/api/admin/capabilities', adminCapabilities),
  retry: false,
});

/** Whether DUP copies get explicit App IDs made through App Store Connect (issue 30). */
export const copyAppIdsQuery = queryOptions({
  queryKey: adminKeys.copyAppIds,
  queryFn: () => api('/api/admin/capabilities/copy-app-ids', adminCopyAppIds),
  retry: false,
});

/** PUT /api/admin/capabilities/copy-app-ids: the operator's choice, answered with the setting as it is now. */
export const setCopyAppIds = (enabled: boolean) =>
  api('/api/admin/capabilities/copy-app-ids', adminCopyAppIds, { method: 'PUT', body: { enabled } });

/** Who did what, newest first. */
export const auditQuery = infiniteQueryOptions({
  queryKey: adminKeys.audit,
  initialPageParam: 0,
  queryFn: async ({ pageParam }) => ({
    entries: await api(`/api/admin/audit/${pageParam}`, auditPage),
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
  queryFn: () => api('/api/admin/devices', adminDevices),
  retry: false,
  refetchInterval: 15_000,
});

/** The signing identity in use: the Apple developer account, or the dev identity. */
export const identityQuery = queryOptions({
  queryKey: adminKeys.identity,
  queryFn: () => api('/api/admin/identity', signingIdentityInfo),
  retry: false,
});

/**
 * The pool of Apple developer accounts: each one's slots per device family and membership renewal.
 * Registrations move the counts and nothing publishes them, so this asks again now and then.
 */
export const accountsQuery = queryOptions({
  queryKey: adminKeys.accounts,
  queryFn: () => api('/api/admin/accounts', developerAccounts),
  retry: false,
  refetchInterval: 15_000,
});

/** Times in the viewer's zone, to the minute. */
export const formatTime = (iso: string | null) => (iso ? formatMoment(iso) : 'never');

/** The setup checklist: what this server runs with, and the setting that completes each step. */
export const setupChecklistQuery = queryOptions({
  queryKey: adminKeys.setup,
  queryFn: () => api('/api/admin/setup', setupChecklist),
  retry: false,
  // An agent coming online shows without a reload.
  refetchInterval: 30_000,
});

/** /setup/:token: whether the first admin's setup link is still good (asked once; its 4xx sentence is shown). */
export const setupLinkQuery = (token: string) =>
  queryOptions({
    queryKey: adminKeys.setupLink(token),
    queryFn: async () => {
      await api(`/api/setup/${encodeURIComponent(token)}`, noContent);
      return true;
    },
    retry: false,
    staleTime: Infinity,
  });

/** Updates waiting, under way and started automatically today against the cap (issue 33). */
export const updatesOverviewQuery = queryOptions({
  queryKey: adminKeys.updates,
  queryFn: () => api('/api/admin/updates', updatesOverview),
  retry: false,
  // Updates start and end while the panel is open; no event tells the admin of them.
  refetchInterval: 30_000,
});

/** PUT /api/admin/updates/cap: automatic updates a day may start (null: AUTO_UPDATE_DAILY_CAP again). */
export const setAutoUpdateCap = (cap: number | null) =>
  api('/api/admin/updates/cap', updatesOverview, { method: 'PUT', body: { cap } });

/** POST /api/admin/updates/check: the store check now, for apps not checked within its interval. */
export const checkUpdatesNow = () => api('/api/admin/updates/check', updateCheckResult, { method: 'POST' });

/** POST /api/admin/agents: a new agent, with its token (shown once: the server keeps a hash). */
export const createAgent = (name: string) =>
  api('/api/admin/agents', createdAgent, { method: 'POST', body: { name } });

/** DELETE /api/admin/agents/{id}: its token stops working at once. */
export const revokeAgent = (id: string) => api(`/api/admin/agents/${id}`, noContent, { method: 'DELETE' });

/** POST /api/admin/queue/{seq}/retry: a failed or stuck entry gets its attempts anew. */
export const retryQueued = (seq: string) =>
  api(`/api/admin/queue/${seq}/retry`, noContent, { method: 'POST' });

/** POST /api/admin/devices/{id}/confirm or /retry: a Mac confirmed, or a registration tried again now. */
export const actOnDevice = (id: string, action: 'confirm' | 'retry') =>
  api(`/api/admin/devices/${id}/${action}`, adminDevice, { method: 'POST' });

/** POST /api/admin/identity/feather-cert/rotate: Feather gets a new certificate from now on. */
export const rotateFeatherCertificate = () =>
  api('/api/admin/identity/feather-cert/rotate', signingIdentityInfo, { method: 'POST' });

/** POST /api/admin/accounts: an App Store Connect key, checked with Apple, then kept sealed. */
export const addDeveloperAccount = (account: AddDeveloperAccountRequest) =>
  api('/api/admin/accounts', developerAccount, { method: 'POST', body: account });

/** PATCH /api/admin/accounts/{id}: when the account's membership renews (null: not known). */
export const setMembershipRenewal = (id: string, membershipRenewsAt: string | null) =>
  api(`/api/admin/accounts/${id}`, developerAccount, {
    method: 'PATCH',
    body: { membership_renews_at: membershipRenewsAt },
  });

/** POST /api/admin/accounts/{id}/disable or /enable: whether devices go to the account. */
export const setDeveloperAccountState = (id: string, action: 'disable' | 'enable') =>
  api(`/api/admin/accounts/${id}/${action}`, developerAccount, { method: 'POST' });

/** POST /api/setup/{token}: the first admin, created with the setup link and signed in (its 401 is the form's). */
export const createFirstAdmin = (token: string, credentials: Credentials) =>
  api(`/api/setup/${encodeURIComponent(token)}`, gradeAnswer, {
    method: 'POST',
    body: credentials,
    isAuthAttempt: true,
  });
