import type { QueryClient } from '@tanstack/react-query';
import type { AppEntry, DecryptAnswer } from '@sideport/contracts';
import { applyVersionEvent, removeEntry } from '../../entries/apply-event';
import { catalogKeys } from '../../entries/query-keys';
import { alertFailure, ApiError, RETRY_LATER } from '../../lib/api';
import { useClientStore } from '../../lib/store';
import {
  blacklistQuestion,
  DAILY_LIMIT,
  DECRYPT_WARNING,
  deleteQuestion,
  FREE_USER_WARNING,
  NEED_PREMIUM,
  NO_PERMISSION,
  PREMIUM_QUEUE_QUESTION,
} from './messages';
import { askDecrypt, askPremium, askTodaysUse, deleteEntryRequest, moveDecryptToPremium } from './queries';

type EntryRef = Pick<AppEntry, 'country' | 'app_id' | 'app_ver_id' | 'name'>;

/** docs/product.md, Roles: premium is what GET /api/premium says; any failure means not premium. */
export const isPremium = () =>
  askPremium().then(
    () => true,
    () => false,
  );

/** The server's answer to a request is the entry as it now stands: shown like a live event. */
function showAnswer(queryClient: QueryClient, entry: EntryRef, answer: DecryptAnswer) {
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

/** Actions under way, by entry: a second press (a double click) while one asks or waits does nothing. */
const running = new Set<string>();

/** Runs `work` unless the same action on the same entry is already running: one dialog sequence per action. */
async function once(action: string, entry: EntryRef, work: () => Promise<void>) {
  const key = `${action}/${entry.country}/${entry.app_id}/${entry.app_ver_id ?? ''}`;
  if (running.has(key)) return;
  running.add(key);
  try {
    await work();
  } finally {
    running.delete(key);
  }
}

/** Today's decrypt requests are all used: a new entry would be refused (joining one is not counted). */
const isOverDailyLimit = () =>
  askTodaysUse().then(
    (info) => info.used_today >= info.daily_limit,
    () => false,
  );

/**
 * Decrypt (docs/product.md, States, Validation and confirmations and Roles): what the server would
 * refuse (a version for a free user, a new request over the daily limit) is said before anything is
 * asked; then confirm, then free users confirm the slow queue. `scope` 'app' asks for the store's
 * current version; 'version' for this one, which is premium only. Only an Available entry (none
 * requested yet) counts against the limit.
 */
export function requestDecrypt(
  queryClient: QueryClient,
  entry: EntryRef & { status?: string },
  scope: 'app' | 'version',
) {
  return once('decrypt', entry, async () => {
    const isNew = entry.status === undefined || entry.status === 'Available';
    const [premium, overLimit] = await Promise.all([isPremium(), isNew ? isOverDailyLimit() : false]);
    if (scope === 'version' && !premium) return window.alert(NEED_PREMIUM);
    if (overLimit) return window.alert(DAILY_LIMIT);
    if (!window.confirm(DECRYPT_WARNING)) return;
    if (!premium && !window.confirm(FREE_USER_WARNING)) return;
    const version = scope === 'version' ? entry.app_ver_id : undefined;
    try {
      const answer = showAnswer(queryClient, entry, await askDecrypt(entry.country, entry.app_id, version));
      // Joining an earlier request, or a version already done: say so, as nothing new was queued.
      if (answer.joined) window.alert(answer.message);
    } catch (error) {
      alertFailure(error);
    }
  });
}

/** 'Enqueued...' offers the premium queue to premium users (docs/product.md, States); others are told why not first. */
export function moveToPremiumQueue(queryClient: QueryClient, entry: EntryRef) {
  return once('premium-queue', entry, () => movePremium(queryClient, entry));
}

async function movePremium(queryClient: QueryClient, entry: EntryRef) {
  if (!(await isPremium())) return window.alert(NEED_PREMIUM);
  if (!window.confirm(PREMIUM_QUEUE_QUESTION)) return;
  try {
    showAnswer(queryClient, entry, await moveDecryptToPremium(entry.country, entry.app_id, entry.app_ver_id));
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
export function deleteEntry(queryClient: QueryClient, entry: EntryRef, kind: 'done' | 'queued') {
  return once(`delete-${kind}`, entry, () => removeAsked(queryClient, entry, kind));
}

async function removeAsked(queryClient: QueryClient, entry: EntryRef, kind: 'done' | 'queued') {
  if (useClientStore.getState().grade === 0) return window.alert(NO_PERMISSION);
  const isQueued = kind === 'queued';
  if (!window.confirm(deleteQuestion(entry.name, isQueued))) return;
  const black = isQueued && window.confirm(blacklistQuestion(entry.name));
  try {
    await deleteEntryRequest(entry, kind, black);
    removeEntry(queryClient, entry);
  } catch (error) {
    // A 401 already sent the person to sign in.
    if (!(error instanceof ApiError && error.isHandled)) window.alert(RETRY_LATER);
  }
}
