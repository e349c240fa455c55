import { useQueryClient } from '@tanstack/react-query';
import type { AppEntry } from '@sideport/contracts';
import { requireSignIn } from '../../lib/api';
import { deleteEntry, isPremium, moveToPremiumQueue, requestDecrypt } from '../versions/actions';
import { NEED_PREMIUM } from '../versions/messages';
import type { VersionTarget } from '../versions/version-modal';
import type { CardAction, ListKind } from './status-buttons';

/**
 * What the card buttons do (docs/product.md, States, Validation and confirmations, Roles, Calls and Errors). Anonymous visitors are sent to sign in by any
 * action. View opens the version modal; Downgrade too, after the premium check; Decrypt and the
 * premium queue confirm first; admin delete confirms (with the blacklist choice for queue entries).
 */
export function useCardActions(list: ListKind, openVersions: (target: VersionTarget) => void) {
  const queryClient = useQueryClient();

  const downgrade = async (entry: AppEntry) => {
    if (await isPremium()) openVersions({ entry, mode: 'downgrade' });
    else window.alert(NEED_PREMIUM);
  };

  return (action: CardAction, entry: AppEntry) => {
    if (!requireSignIn()) return;
    switch (action) {
      case 'view':
        return openVersions({ entry, mode: 'view' });
      case 'downgrade':
        return void downgrade(entry);
      case 'decrypt':
        return void requestDecrypt(queryClient, entry, 'app');
      case 'premium-queue':
        return void moveToPremiumQueue(queryClient, entry);
      case 'delete':
        return void deleteEntry(
          queryClient,
          entry,
          list === 'queue' || entry.status !== 'Done' ? 'queued' : 'done',
        );
    }
  };
}
