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
 * The button of an entry on its way through the queue (docs/product.md, States): Pending shows
 * 'Enqueued...', which offers the premium queue to an entry not already in it; working states show
 * their progress, Not shows 'Not Support'. Available and Done have none here: their buttons depend
 * on where they show.
 */
export function progressButton(entry: Pick<AppEntry, 'status' | 'premium'>): CardButton | undefined {
  switch (entry.status) {
    case 'Pending':
      return entry.premium
        ? { label: 'Enqueued...', variant: 'outline-info', disabled: true }
        : { label: 'Enqueued...', action: 'premium-queue', variant: 'outline-dark' };
    case 'Process':
      return { label: 'Processing...', variant: 'outline-info', disabled: true };
    case 'Downloaded':
      return { label: 'Pending...', variant: 'outline-info', disabled: true };
    case 'Downloading':
      return { label: 'Downloading...', variant: 'outline-info', disabled: true };
    case 'Not':
      return { label: 'Not Support', variant: 'outline-secondary', disabled: true };
    default:
      return undefined;
  }
}

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
