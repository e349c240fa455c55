import { useQueryClient, type InfiniteData } from '@tanstack/react-query';
import type { AppEntry } from '@sideport/contracts';
import { alertFailure, api, requireSignIn, RETRY_LATER } from '../../lib/api';
import { useClientStore } from '../../lib/store';
import type { CardAction, ListKind } from './status-buttons';

const sameEntry = (a: AppEntry, b: AppEntry) => a.app_id === b.app_id && a.app_ver_id === b.app_ver_id && a.country === b.country;

/**
 * What the card buttons do. Anonymous visitors are sent to sign in by any action. Admin delete
 * confirms (with the blacklist choice for queue entries) and removes the item from the shown list.
 * Decrypt, downgrade and the version modal arrive with their issues; until then they say so.
 */
export function useCardActions(list: ListKind) {
  const queryClient = useQueryClient();

  const removeFromLists = (entry: AppEntry) => {
    queryClient.setQueriesData<InfiniteData<{ entries: AppEntry[] }>>({ queryKey: ['list'] }, (data) =>
      data && { ...data, pages: data.pages.map((p) => ({ ...p, entries: p.entries.filter((e) => !sameEntry(e, entry)) })) },
    );
    queryClient.setQueriesData<AppEntry[]>({ queryKey: ['search'] }, (data) => data?.filter((e) => !sameEntry(e, entry)));
  };

  const remove = async (entry: AppEntry) => {
    if (useClientStore.getState().grade === 0) return window.alert('Do not have permission.');
    const isQueued = list === 'queue' || entry.status !== 'Done';
    if (!window.confirm(`Really want delete '${entry.name}'${isQueued ? ' in queue?' : '?'}`)) return;
    const black = isQueued && window.confirm(`Add to black list '${entry.name}'?`);
    const version = entry.app_ver_id ?? '0';
    const path = !isQueued
      ? `/api/app/${entry.app_id}/${version}`
      : `/api/queue/${black ? 'black/' : ''}${entry.app_id}/${version}`;
    try {
      await api(path, { method: 'DELETE' });
      removeFromLists(entry);
    } catch {
      window.alert(RETRY_LATER);
    }
  };

  return (action: CardAction, entry: AppEntry) => {
    if (!requireSignIn()) return;
    if (action === 'delete') return void remove(entry);
    alertFailure(new Error('not yet'));
  };
}
