import type { AppEntry } from '@sideport/contracts';

export type CardAction = 'view' | 'delete' | 'decrypt' | 'downgrade' | 'premium-queue';
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
