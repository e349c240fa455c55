import type { AppEntry } from '@sideport/contracts';
import { progressButton, type CardButton } from '../../entries/progress-button';

export type ListKind = 'latest' | 'queue' | 'search';

/**
 * The buttons of an app card by decrypt status (docs/product.md, Screens and States): only Available shows
 * Decrypt; admins get Delete beside View; the rest is the entry's progress.
 */
export function cardButtons(
  entry: Pick<AppEntry, 'status' | 'premium'>,
  list: ListKind,
  isAdmin: boolean,
): CardButton[] {
  const buttons: CardButton[] = [];
  if (list !== 'queue') buttons.push({ label: 'View', action: 'view', variant: 'primary' });
  if (isAdmin) buttons.push({ label: 'Delete', action: 'delete', variant: 'danger' });
  if (entry.status === 'Available') {
    buttons.push({ label: 'Downgrade', action: 'downgrade', variant: 'outline-secondary' });
    buttons.push({ label: 'Decrypt', action: 'decrypt', variant: 'success' });
  } else if (entry.status === 'Done') {
    if (list !== 'queue')
      buttons.push({ label: 'Downgrade', action: 'downgrade', variant: 'outline-secondary' });
  } else {
    buttons.push(progressButton(entry)!);
  }
  return buttons;
}
