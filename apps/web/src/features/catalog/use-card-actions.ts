import { useQueryClient } from '@tanstack/react-query';
import type { AppEntry } from '@sideport/contracts';
import { requireSignIn } from '../../lib/api';
import type { VersionTarget } from '../versions/version-target';
import type { CardAction } from '../../entries/progress-button';
import type { ListKind } from './status-buttons';

// What the buttons do loads with the first press: the first screen only shows them.
const actions = () => import('../versions/actions');

/**
 * What the card buttons do (docs/product.md, States, Validation and confirmations, Roles, Calls and Errors). Anonymous visitors are sent to sign in by any
 * action. View opens the version modal; Downgrade too, after the premium check; Decrypt and the
 * premium queue confirm first; admin delete confirms (with the blacklist choice for queue entries).
 */
export function useCardActions(list: ListKind, openVersions: (target: VersionTarget) => void) {
  const queryClient = useQueryClient();

  const downgrade = async (entry: AppEntry) => {
    const { isPremium } = await actions();
    const { NEED_PREMIUM } = await import('../versions/messages');
    if (await isPremium()) openVersions({ entry, mode: 'downgrade' });
    else window.alert(NEED_PREMIUM);
  };

  return async (action: CardAction, entry: AppEntry) => {
    if (!requireSignIn()) return;
    if (action === 'view') return openVersions({ entry, mode: 'view' });
    if (action === 'downgrade') return downgrade(entry);
    const { deleteEntry, moveToPremiumQueue, requestDecrypt } = await actions();
    switch (action) {
      case 'decrypt':
        return requestDecrypt(queryClient, entry, 'app');
      case 'premium-queue':
        return moveToPremiumQueue(queryClient, entry);
      case 'delete':
        return deleteEntry(
          queryClient,
          entry,
          list === 'queue' || entry.status !== 'Done' ? 'queued' : 'done',
        );
    }
  };
}
