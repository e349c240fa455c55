import { queryOptions } from '@tanstack/react-query';
import {
  accountInfo,
  appList,
  decryptAnswer,
  noContent,
  premiumAnswer,
  signAnswer,
  signCheckAnswer,
  urlAnswer,
  versionHistoryAnswer,
  type SignType,
} from '@sideport/contracts';
import type { LiveEntry } from '../../entries/live-entry';
import { versionKeys } from '../../entries/query-keys';
import { api } from '../../lib/api';

/** View: the versions Sideport knows of an app, newest first (GET /api/version). */
export const versionsQuery = (country: string, appId: string) =>
  queryOptions({
    queryKey: versionKeys.list(country, appId),
    queryFn: (): Promise<LiveEntry[]> => api(`/api/version/${country}/${appId}`, appList),
    // A busy server or a dropped connection is tried again (the modal shows its spinner meanwhile),
    // as every read is (main.tsx); a 4xx is said at once.
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
    queryFn: (): Promise<{ name: string; version_list: LiveEntry[] }> =>
      api(`/api/version/${country}/${appId}`, versionHistoryAnswer, { method: 'POST' }),
    retry: false,
    staleTime: Infinity,
    gcTime: 0,
  });

/** GET /api/premium: answers only a premium user (others: 403). */
export const askPremium = () => api('/api/premium', premiumAnswer);

/** GET /api/info, asked afresh before a decrypt request: today's use against the daily limit. */
export const askTodaysUse = () => api('/api/info', accountInfo);

/** GET /api/decrypt/{country}/{app_id}[/{app_ver_id}]: a decrypt of the app's current version, or of this one. */
export const askDecrypt = (country: string, appId: string, appVerId?: string | null) =>
  api(`/api/decrypt/${country}/${appId}${appVerId === undefined ? '' : `/${appVerId}`}`, decryptAnswer);

/** PATCH /api/decrypt/...: the request moves to the premium queue. */
export const moveDecryptToPremium = (country: string, appId: string, appVerId: string | null) =>
  api(`/api/decrypt/${country}/${appId}${appVerId ? `/${appVerId}` : ''}`, decryptAnswer, {
    method: 'PATCH',
  });

/**
 * Admin delete: DELETE /api/app/{app_id}/{app_ver_id} (a decrypted version) or /api/queue[/black]/...
 * (a queue entry, its app blacklisted with `black`). App-level queue entries, whose version is not
 * known yet, are named by version 0 and their country.
 */
export function deleteEntryRequest(
  entry: { country: string; app_id: string; app_ver_id: string | null },
  kind: 'done' | 'queued',
  black: boolean,
) {
  const version = entry.app_ver_id ?? '0';
  const ofCountry = entry.app_ver_id === null ? `?country=${entry.country}` : '';
  const path =
    kind === 'queued'
      ? `/api/queue/${black ? 'black/' : ''}${entry.app_id}/${version}${ofCountry}`
      : `/api/app/${entry.app_id}/${version}`;
  return api(path, noContent, { method: 'DELETE' });
}

/** PUT /api/sign/{app_id}/{app_ver_id}: a sign in mode `type`, and where it stands. */
export const askSign = (appId: string, appVerId: string | null, type: SignType) =>
  api(`/api/sign/${appId}/${appVerId}`, signAnswer, { method: 'PUT', body: { type } });

/** GET /api/check/sign/...: whether the sign still serves every device of the caller (406, 409 when not). */
export const checkSign = (appId: string, appVerId: string | null, type: SignType) =>
  api(`/api/check/sign/${appId}/${appVerId}/${type}`, signCheckAnswer);

/** GET /api/install/...: the itms-services URL of the signed app. */
export const installUrl = (appId: string, appVerId: string | null, type: SignType) =>
  api(`/api/install/${appId}/${appVerId}/${type}`, urlAnswer);

/** GET /api/download/{app_id}/{app_ver_id}: the signed URL of the decrypted IPA. */
/** After a 409 TEAM_MOVED: the person read what moving to another team means for their apps. */
export const acknowledgeTeamMove = () => api('/api/team-move/acknowledge', noContent, { method: 'POST' });

export const downloadUrl = (appId: string, appVerId: string) =>
  api(`/api/download/${appId}/${appVerId}`, urlAnswer);
