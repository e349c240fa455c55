import type { AppEntry } from '@sideport/contracts';

export type CardAction = 'view' | 'delete' | 'decrypt' | 'downgrade' | 'premium-queue';
export type ListKind = 'latest' | 'queue' | 'search';

export interface CardButton {
  label: string;
  action?: CardAction;
  variant: string;
  disabled?: boolean;
}

/**
 * The buttons of an app card by decrypt status (spec sections 2 and 4): only Available shows
 * Decrypt; Pending shows 'Enqueued...' (which offers the premium queue); working states show
 * their progress; Not shows 'Not Support'. Admins get Delete beside View.
 */
export function cardButtons(entry: Pick<AppEntry, 'status'>, list: ListKind, isAdmin: boolean): CardButton[] {
  const buttons: CardButton[] = [];
  if (list !== 'queue') buttons.push({ label: 'View', action: 'view', variant: 'primary' });
  if (isAdmin) buttons.push({ label: 'Delete', action: 'delete', variant: 'danger' });
  switch (entry.status) {
    case 'Available':
      buttons.push({ label: 'Downgrade', action: 'downgrade', variant: 'outline-secondary' });
      buttons.push({ label: 'Decrypt', action: 'decrypt', variant: 'success' });
      break;
    case 'Done':
      if (list !== 'queue')
        buttons.push({ label: 'Downgrade', action: 'downgrade', variant: 'outline-secondary' });
      break;
    case 'Pending':
      buttons.push({ label: 'Enqueued...', action: 'premium-queue', variant: 'outline-warning' });
      break;
    case 'Process':
      buttons.push({ label: 'Processing...', variant: 'outline-info', disabled: true });
      break;
    case 'Downloaded':
      buttons.push({ label: 'Pending...', variant: 'outline-info', disabled: true });
      break;
    case 'Downloading':
      buttons.push({ label: 'Downloading...', variant: 'outline-info', disabled: true });
      break;
    case 'Not':
      buttons.push({ label: 'Not Support', variant: 'outline-secondary', disabled: true });
      break;
  }
  return buttons;
}
