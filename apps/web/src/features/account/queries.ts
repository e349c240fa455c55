import { queryOptions } from '@tanstack/react-query';
import {
  accountInfo,
  appUpdate,
  appUpdates,
  autoUpdateSettings,
  featherCertAnswer,
  urlAnswer,
  type AppUpdate,
} from '@sideport/contracts';
import { accountKeys, updateKeys } from '../../entries/query-keys';
import { api } from '../../lib/api';

/** GET /api/info: the account, its plan and today's use, and its devices (refetched on device events). */
export const infoQuery = queryOptions({
  queryKey: accountKeys.info,
  queryFn: () => api('/api/info', accountInfo),
});

/** GET /api/pay/service/{n}: a checkout of plan or reset `n` (docs/product.md, Calls). */
export const serviceCheckout = (n: number) => api(`/api/pay/service/${n}`, urlAnswer);

/** GET /api/pay/device/{index}: a checkout of the device at `index` of the person's list. */
export const deviceCheckout = (index: number) => api(`/api/pay/device/${index}`, urlAnswer);

/** GET /api/portal: the payment provider's billing portal of the person. */
export const billingPortal = () => api('/api/portal', urlAnswer);

/** GET /api/feather/install: the operator's Feather signed for the person's devices (may wait for that sign). */
export const featherInstall = () => api('/api/feather/install', urlAnswer);

/** GET /api/feather/cert: a new cert zip and its password, which is only in this answer. */
export const featherCert = () => api('/api/feather/cert', featherCertAnswer);

/** GET /api/updates: the person's installed apps with a newer store version, and updates under way (live 'update' events refetch it). */
export const updatesQuery = queryOptions({
  queryKey: updateKeys.list,
  queryFn: () => api('/api/updates', appUpdates),
});

/** GET /api/updates/auto: automatic updates, for every app or for some (premium). */
export const autoUpdatesQuery = queryOptions({
  queryKey: updateKeys.auto,
  queryFn: () => api('/api/updates/auto', autoUpdateSettings),
});

/** POST /api/updates/{app_id}/{type}: decrypt the store's version, then sign it like the installed one. */
export const startUpdate = (update: AppUpdate) =>
  api(`/api/updates/${update.app_id}/${update.sign_type}`, appUpdate, { method: 'POST' });

/** PUT /api/updates/auto: `appId` null for every app. */
export const setAutoUpdate = (appId: string | null, enabled: boolean) =>
  api('/api/updates/auto', autoUpdateSettings, { method: 'PUT', body: { app_id: appId, enabled } });

/** GET /api/install/...: the itms-services URL of the update's new artifact. */
export const installUpdate = (update: AppUpdate) =>
  api(`/api/install/${update.app_id}/${update.app_ver_id}/${update.sign_type}`, urlAnswer);
