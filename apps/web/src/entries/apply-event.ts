import { hashKey, type QueryClient, type QueryKey } from '@tanstack/react-query';
import {
  signModeOf,
  type LiveEvent,
  type SignEvent,
  type SignStatus,
  type SignType,
  type VersionEvent,
} from '@sideport/contracts';
import { editEntryCaches, type CachedEntry, type EntryCache, type EntryEdit } from './entry-caches';
import { accountKeys, adminKeys, catalogKeys, notificationKeys, updateKeys, versionKeys } from './query-keys';

type EntryRef = Pick<CachedEntry, 'country' | 'app_id' | 'app_ver_id'>;

const sameApp = (e: Pick<CachedEntry, 'country' | 'app_id'>, ref: Pick<CachedEntry, 'country' | 'app_id'>) =>
  e.country === ref.country && e.app_id === ref.app_id;

/**
 * Whether a cached entry shows the entry an event is about. A store version (app_ver_id set) is one
 * entry in every country's listing, each with that country's record of the app; an app-level
 * request is its country's own. An app-level request that became a version (`previous_app_ver_id`
 * null) is found in its country's listings by its old, versionless form.
 */
function showsEvent(e: CachedEntry, event: VersionEvent) {
  if (e.app_id !== event.app_id) return false;
  if (e.app_ver_id !== null)
    return e.app_ver_id === event.app_ver_id || e.app_ver_id === event.previous_app_ver_id;
  return e.country === event.country && (event.app_ver_id === null || event.previous_app_ver_id === null);
}

/** Whether a list of an app in some country shows an entry of the event's: any country's for a store version. */
const listsEventApp = (ref: Pick<CachedEntry, 'country' | 'app_id'>, event: VersionEvent) =>
  event.app_ver_id !== null ? ref.app_id === event.app_id : sameApp(ref, event);

/**
 * A decrypt entry changed (a live event, or the answer to this tab's own request): every cached
 * list, search, version list and the admin queue shows it now. An entry that leaves a list (Done
 * leaves the queue, 'Deleted' leaves everything) goes; a list that should gain one (a new request
 * in the queue, a new Done version in latest) is refetched.
 */
export function applyVersionEvent(
  queryClient: QueryClient,
  event: VersionEvent,
  /** Bring only this query, just fetched, up to the event: no refetch (see reconcileWithLedger). */
  only?: QueryKey,
) {
  const isTarget = (e: CachedEntry) => showsEvent(e, event);
  const deleted = event.status === 'Deleted';
  const now = (e: CachedEntry): CachedEntry =>
    isTarget(e)
      ? ({
          ...e,
          status: event.status,
          premium: event.premium,
          app_ver_id: event.app_ver_id,
          version: event.version ?? (e as { version?: string }).version,
          progress: event.progress,
        } as CachedEntry)
      : e;
  const patch: EntryEdit = { map: now };
  const drop: EntryEdit = { map: (e) => (isTarget(e) ? null : e) };

  const decide = (
    cache: EntryCache,
    entries: readonly CachedEntry[],
    key: QueryKey,
  ): EntryEdit | undefined => {
    const has = entries.some(isTarget);
    switch (cache) {
      case 'latest':
        if (deleted) return has ? drop : undefined;
        if (event.status === 'Done') return has ? patch : { refetch: true };
        return has ? patch : undefined;
      case 'queue':
      case 'admin-queue': {
        // The queue shows waiting and working entries; the admin's also keeps those that failed.
        const leaves = deleted || event.status === 'Done' || (cache === 'queue' && event.status === 'Not');
        // Places in line move when an entry starts, leaves or changes lane: the queue asks again then
        // (a progress report alone changes nobody's place).
        const shown = entries.find(isTarget);
        const moves =
          cache === 'queue' &&
          shown !== undefined &&
          (shown.status !== event.status || (shown as { premium?: boolean }).premium !== event.premium);
        if (leaves) return has ? { ...drop, refetch: cache === 'queue' } : undefined;
        if (has) return { ...patch, refetch: moves };
        return event.status === 'Pending' ? { refetch: true } : undefined;
      }
      case 'search':
        // A search shows one status per app: what replaces a deleted entry is the server's to say;
        // a Not entry's reason is its requester's, which only the answer carries.
        if (has && !deleted) return { ...patch, refetch: event.status === 'Not' };
        return entries.some((e) => listsEventApp(e, event)) ? { refetch: true } : undefined;
      case 'versions': {
        // A store version shows in every country's version list of its app.
        const [, country] = key as ReturnType<typeof versionKeys.list>;
        if (hashKey(key) !== hashKey(versionKeys.list(country, event.app_id))) return undefined;
        if (!listsEventApp({ country, app_id: event.app_id }, event)) return undefined;
        if (deleted) return has ? drop : undefined;
        // A new entry, one now Done (its size, minimum iOS and signing statuses) or Not (its reason): ask again.
        return { ...(has ? patch : {}), refetch: !has || event.status === 'Done' || event.status === 'Not' };
      }
      case 'history':
        if (!has) return undefined;
        if (!deleted) return patch;
        // A store version whose entry went is Available again; an app-level request just goes.
        return {
          map: (e) =>
            !isTarget(e)
              ? e
              : e.app_ver_id === null
                ? null
                : ({ ...e, status: 'Available', premium: false, progress: null } as CachedEntry),
        };
    }
  };
  if (only === undefined) {
    editEntryCaches(queryClient, decide);
  } else {
    editEntryCaches(
      queryClient,
      (cache, entries, key) => {
        const edit = decide(cache, entries, key);
        return edit?.map ? { map: edit.map } : undefined;
      },
      only,
    );
  }
}

/** How many entries the ledger remembers, and for how long: a list answer is at most seconds behind. */
const LEDGER_SIZE = 2000;
const LEDGER_MS = 10 * 60_000;
const ledger = new Map<string, { event: VersionEvent; at: number }>();
const ledgerKey = (country: string, appId: string, appVerId: string | null) =>
  `${country}/${appId}/${appVerId ?? ''}`;

/**
 * The latest live event heard for each entry, newest last (this tab's own request answers are not
 * kept: a live event that overtook one is newer).
 */
function remember(event: VersionEvent) {
  if (event.previous_app_ver_id !== undefined)
    ledger.delete(ledgerKey(event.country, event.app_id, event.previous_app_ver_id));
  const key = ledgerKey(event.country, event.app_id, event.app_ver_id);
  ledger.delete(key);
  ledger.set(key, { event, at: Date.now() });
  if (ledger.size > LEDGER_SIZE) ledger.delete(ledger.keys().next().value!);
}

/** After a gap in the stream the ledger may miss changes: what the server says next is newer. */
export function forgetLedger() {
  ledger.clear();
}

/**
 * A list, search or version answer can be older than an event already applied: a request sent
 * before the event (an infinite list refetching page by page, the first load racing the stream),
 * or the server's briefly reused answer (LIST_CACHE_MS). Applying it as is would bring back an
 * entry that finished, 'Processing...' forever since its last event is gone. So each answer, as
 * it lands, is brought up to the latest event heard for every entry it shows.
 */
export function reconcileWithLedger(queryClient: QueryClient, queryKey: QueryKey) {
  if (ledger.size === 0) return;
  const now = Date.now();
  for (const [key, { at }] of ledger) {
    if (now - at <= LEDGER_MS) break;
    ledger.delete(key);
  }
  for (const { event } of ledger.values()) applyVersionEvent(queryClient, event, queryKey);
}

/** This tab's own delete: the entry leaves every list at once, search results included (docs/product.md, States). */
export function removeEntry(queryClient: QueryClient, ref: EntryRef) {
  editEntryCaches(queryClient, (cache) =>
    cache === 'search'
      ? { map: (e) => (sameApp(e, ref) && e.app_ver_id === ref.app_ver_id ? null : e) }
      : undefined,
  );
  const deleted: VersionEvent = {
    type: 'version',
    ...ref,
    version: null,
    status: 'Deleted',
    premium: false,
    progress: null,
  };
  remember(deleted);
  applyVersionEvent(queryClient, deleted);
}

const SIGN_ORDER: Record<SignStatus, number> = { No: 0, Pending: 1, Process: 2, Done: 3 };

/** The entry's `resigning` with `type` in it or out of it; absent when it lists none (as the server sends it). */
function withResigning(entry: CachedEntry, type: SignType, isResigning: boolean): CachedEntry {
  const { resigning = [], ...rest } = entry as CachedEntry & { resigning?: SignType[] };
  const next = [...resigning.filter((t) => t !== type), ...(isResigning ? [type] : [])].sort();
  return (next.length ? { ...rest, resigning: next } : rest) as CachedEntry;
}

/**
 * A signing status of the caller changed: the version modal's buttons follow. With `onlyForward`
 * a status behind the one shown is ignored: an answer that left the server before a live event
 * arrived must not take the button back. A live event also says whether recovery is signing it
 * again ('Re-signing'); this tab's own guesses (`isLocal`) leave that as shown.
 */
export function applySignEvent(
  queryClient: QueryClient,
  event: Omit<SignEvent, 'type'>,
  { onlyForward = false, isLocal = false }: { onlyForward?: boolean; isLocal?: boolean } = {},
) {
  const field = signModeOf(event.sign_type).statusField;
  const isBehind = (e: CachedEntry) => {
    const shown = (e as Partial<Record<typeof field, SignStatus>>)[field];
    return onlyForward && shown !== undefined && SIGN_ORDER[shown] >= SIGN_ORDER[event.status];
  };
  const changed = (e: CachedEntry): CachedEntry => {
    const next = { ...e, [field]: event.status } as CachedEntry;
    return isLocal ? next : withResigning(next, event.sign_type, event.resigning === true);
  };
  editEntryCaches(queryClient, (cache) =>
    cache === 'versions' || cache === 'history'
      ? {
          map: (e) =>
            e.app_id === event.app_id && e.app_ver_id === event.app_ver_id && !isBehind(e) ? changed(e) : e,
        }
      : undefined,
  );
}

export function applyLiveEvent(queryClient: QueryClient, event: LiveEvent) {
  if (event.type === 'version') {
    remember(event);
    applyVersionEvent(queryClient, event);
  } else if (event.type === 'sign') applySignEvent(queryClient, event);
  // One of the person's updates moved on (Decrypting, Signing, Ready): My page's list and the badges.
  else if (event.type === 'update') void queryClient.invalidateQueries({ queryKey: updateKeys.all });
  // A notification was made for the person: the bell's count and list.
  else if (event.type === 'notification')
    void queryClient.invalidateQueries({ queryKey: notificationKeys.list });
  else {
    // A device changed: the user's own list, and for an admin the devices waiting and the
    // developer accounts' slots (a registration, or a move to another account).
    void queryClient.invalidateQueries({ queryKey: accountKeys.info });
    void queryClient.invalidateQueries({ queryKey: adminKeys.devices });
    void queryClient.invalidateQueries({ queryKey: adminKeys.accounts });
  }
}

/** After the stream dropped, events may have been missed: everything shown is asked again. */
export function refreshAfterGap(queryClient: QueryClient) {
  forgetLedger();
  for (const queryKey of [
    catalogKeys.lists,
    catalogKeys.searches,
    versionKeys.lists,
    adminKeys.all,
    accountKeys.info,
    updateKeys.all,
    notificationKeys.list,
  ]) {
    void queryClient.invalidateQueries({ queryKey });
  }
}
