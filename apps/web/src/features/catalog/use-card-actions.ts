import { useQueryClient, type InfiniteData } from '@tanstack/react-query';
import type { AppEntry } from '@sideport/contracts';
import { alertFailure, api, requireSignIn, RETRY_LATER } from '../../lib/api';
import { useClientStore } from '../../lib/store';
import type { CardAction, ListKind } from './status-buttons';

const sameEntry = (a: AppEntry, b: AppEntry) =>
  a.app_id === b.app_id && a.app_ver_id === b.app_ver_id && a.country === b.country;

/**
 * What the card buttons do (spec sections 4-8). Anonymous visitors are sent to sign in by any
 * action. Admin delete confirms (with the blacklist choice for queue entries) and removes the item
 * from the shown list. View, decrypt, downgrade and the premium queue call the spec's routes and
 * show the server's answer; the version modal comes with the versions work.
 */
export function useCardActions(list: ListKind) {
  const queryClient = useQueryClient();

  const removeFromLists = (entry: AppEntry) => {
    queryClient.setQueriesData<InfiniteData<{ entries: AppEntry[] }>>(
      { queryKey: ['list'] },
      (data) =>
        data && {
          ...data,
          pages: data.pages.map((p) => ({ ...p, entries: p.entries.filter((e) => !sameEntry(e, entry)) })),
        },
    );
    queryClient.setQueriesData<AppEntry[]>({ queryKey: ['search'] }, (data) =>
      data?.filter((e) => !sameEntry(e, entry)),
    );
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

  const isPremium = () =>
    api('/api/premium').then(
      () => true,
      () => false,
    );

  /** Spec sections 4-6: confirm, warn free users about the slow queue, then request. */
  const decrypt = async (entry: AppEntry) => {
    if (!window.confirm('Versions that are too old or certain apps may not work.')) return;
    if (
      !(await isPremium()) &&
      !window.confirm('Free users take a long time to decrypt. Service subscription is available on My Page.')
    )
      return;
    try {
      await api(`/api/decrypt/${entry.country}/${entry.app_id}`);
      void queryClient.invalidateQueries({ queryKey: ['search'] });
      void queryClient.invalidateQueries({ queryKey: ['list'] });
    } catch (error) {
      alertFailure(error);
    }
  };

  const downgrade = async (entry: AppEntry) => {
    if (!(await isPremium())) return window.alert('Need decrypt premium.');
    try {
      await api(`/api/version/${entry.country}/${entry.app_id}`, { method: 'POST' });
    } catch (error) {
      alertFailure(error);
    }
  };

  const moveToPremiumQueue = async (entry: AppEntry) => {
    if (!window.confirm('Move to the premium queue?')) return;
    const version = entry.app_ver_id ? `/${entry.app_ver_id}` : '';
    try {
      await api(`/api/decrypt/${entry.country}/${entry.app_id}${version}`, { method: 'PATCH' });
      void queryClient.invalidateQueries({ queryKey: ['list'] });
    } catch (error) {
      alertFailure(error);
    }
  };

  const view = async (entry: AppEntry) => {
    try {
      await api(`/api/version/${entry.country}/${entry.app_id}`);
    } catch (error) {
      alertFailure(error);
    }
  };

  return (action: CardAction, entry: AppEntry) => {
    if (!requireSignIn()) return;
    const run = { delete: remove, decrypt, downgrade, 'premium-queue': moveToPremiumQueue, view }[action];
    void run(entry);
  };
}
