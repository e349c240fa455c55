import type { QueryClient } from '@tanstack/react-query';
import { decryptAnswer, type AppEntry } from '@sideport/contracts';
import { alertFailure, api, ApiError, RETRY_LATER } from '../../lib/api';
import { useClientStore } from '../../lib/store';
import { catalogKeys } from '../catalog/queries';
import { applyVersionEvent, removeEntry } from '../live/apply-event';
import {
  blacklistQuestion,
  DECRYPT_WARNING,
  deleteQuestion,
  FREE_USER_WARNING,
  NEED_PREMIUM,
  NO_PERMISSION,
  PREMIUM_QUEUE_QUESTION,
} from './messages';

type EntryRef = Pick<AppEntry, 'country' | 'app_id' | 'app_ver_id' | 'name'>;

/** docs/product.md, Roles: premium is what GET /api/premium says; any failure means not premium. */
export const isPremium = () =>
  api('/api/premium').then(
    () => true,
    () => false,
  );

/** The server's answer to a request is the entry as it now stands: shown like a live event. */
function showAnswer(queryClient: QueryClient, entry: EntryRef, data: unknown) {
  const answer = decryptAnswer.parse(data);
  applyVersionEvent(queryClient, {
    type: 'version',
    country: entry.country,
    app_id: answer.app_id,
    app_ver_id: answer.app_ver_id,
    previous_app_ver_id: entry.app_ver_id,
    version: answer.version,
    status: answer.status,
    premium: answer.premium,
    progress: null,
  });
  return answer;
}

/**
 * Decrypt (docs/product.md, States, Validation and confirmations and Roles): confirm, then free users confirm the slow queue. `scope` 'app' asks
 * for the store's current version; 'version' for this one, which is premium only.
 */
export async function requestDecrypt(queryClient: QueryClient, entry: EntryRef, scope: 'app' | 'version') {
  if (!window.confirm(DECRYPT_WARNING)) return;
  if (!(await isPremium())) {
    if (scope === 'version') return window.alert(NEED_PREMIUM);
    if (!window.confirm(FREE_USER_WARNING)) return;
  }
  const path = `/api/decrypt/${entry.country}/${entry.app_id}${scope === 'version' ? `/${entry.app_ver_id}` : ''}`;
  try {
    const answer = showAnswer(queryClient, entry, await api<unknown>(path));
    // Joining an earlier request, or a version already done: say so, as nothing new was queued.
    if (answer.joined) window.alert(answer.message);
  } catch (error) {
    alertFailure(error);
  }
}

/** 'Enqueued...' offers the premium queue (docs/product.md, States). */
export async function moveToPremiumQueue(queryClient: QueryClient, entry: EntryRef) {
  if (!window.confirm(PREMIUM_QUEUE_QUESTION)) return;
  const version = entry.app_ver_id ? `/${entry.app_ver_id}` : '';
  try {
    showAnswer(
      queryClient,
      entry,
      await api<unknown>(`/api/decrypt/${entry.country}/${entry.app_id}${version}`, { method: 'PATCH' }),
    );
    // The queue is ordered premium first: its order changed.
    void queryClient.invalidateQueries({ queryKey: catalogKeys.list('queue') });
  } catch (error) {
    alertFailure(error);
  }
}

/**
 * Admin delete (docs/product.md, Validation and confirmations, Roles and Errors): a decrypted version, or a queue entry with the choice to
 * blacklist its app; the entry leaves the shown lists; a failure says 'Please retry later.'.
 */
export async function deleteEntry(queryClient: QueryClient, entry: EntryRef, kind: 'done' | 'queued') {
  if (useClientStore.getState().grade === 0) return window.alert(NO_PERMISSION);
  const isQueued = kind === 'queued';
  if (!window.confirm(deleteQuestion(entry.name, isQueued))) return;
  const black = isQueued && window.confirm(blacklistQuestion(entry.name));
  // 0 names an app-level queue entry whose version is not known yet: its country's own request.
  const version = entry.app_ver_id ?? '0';
  const ofCountry = entry.app_ver_id === null ? `?country=${entry.country}` : '';
  const path = isQueued
    ? `/api/queue/${black ? 'black/' : ''}${entry.app_id}/${version}${ofCountry}`
    : `/api/app/${entry.app_id}/${version}`;
  try {
    await api(path, { method: 'DELETE' });
    removeEntry(queryClient, entry);
  } catch (error) {
    // A 401 already sent the person to sign in.
    if (!(error instanceof ApiError && error.isHandled)) window.alert(RETRY_LATER);
  }
}
