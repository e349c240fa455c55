import { describe, expect, it } from 'vitest';
import type { DecryptStatus } from '@sideport/contracts';
import { cardButtons } from './status-buttons';

const labels = (status: DecryptStatus, list: 'latest' | 'queue' | 'search' = 'search', admin = false) =>
  cardButtons({ status, premium: false }, list, admin).map((b) => b.label);

describe('cardButtons', () => {
  it('offers Decrypt only for Available', () => {
    expect(labels('Available')).toEqual(['View', 'Downgrade', 'Decrypt']);
    for (const status of ['Pending', 'Downloading', 'Downloaded', 'Process', 'Done', 'Not'] as const) {
      expect(labels(status)).not.toContain('Decrypt');
    }
  });

  it('shows progress by status, with the labels of docs/product.md', () => {
    expect(labels('Pending')).toContain('Enqueued...');
    expect(labels('Process')).toContain('Processing...');
    expect(labels('Downloaded')).toContain('Pending...');
    expect(labels('Downloading')).toContain('Downloading...');
    expect(labels('Not')).toContain('Not Support');
  });

  it('offers the premium queue only to an entry that is not already in it', () => {
    expect(cardButtons({ status: 'Pending', premium: false }, 'queue', false)).toEqual([
      expect.objectContaining({ label: 'Enqueued...', action: 'premium-queue' }),
    ]);
    const premium = cardButtons({ status: 'Pending', premium: true }, 'queue', false);
    expect(premium).toEqual([expect.objectContaining({ label: 'Enqueued...', disabled: true })]);
    expect(premium[0]!.action).toBeUndefined();
  });

  it('puts Delete beside View for admins only', () => {
    expect(labels('Done', 'latest', true)).toEqual(['View', 'Delete', 'Downgrade']);
    expect(labels('Done', 'latest', false)).toEqual(['View', 'Downgrade']);
    expect(labels('Pending', 'queue', true)).toEqual(['Delete', 'Enqueued...']);
  });
});
