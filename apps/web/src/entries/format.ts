import type { AppEntry } from '@sideport/contracts';

/**
 * A size in MB as people read it: whole MB from 100, tenths from 10, hundredths below (the server
 * gives hundredths and never 0 for a file of a few kB), without trailing zeros: 50, 64.5, 0.03.
 */
export function formatMb(mb: number): string {
  const digits = mb >= 100 ? 0 : mb >= 10 ? 1 : 2;
  return Number(mb.toFixed(digits)).toLocaleString('en-US');
}

export interface EntryFacts {
  /** '12.5 MB', or null when unknown. */
  size: string | null;
  /** True when size and require are the decrypted IPA's (a Done version). */
  isIpa: boolean;
  /** What the store's listing says where it differs from the IPA: 'The store lists 64.5 MB and iOS 7.0.' */
  storeNote: string | null;
}

/** Size and minimum iOS of an entry, saying which are the IPA's and where the listing differs. */
export function entryFacts(
  entry: Pick<AppEntry, 'size' | 'require' | 'store_size' | 'store_require'>,
): EntryFacts {
  const size = entry.size === null ? null : `${formatMb(entry.size)} MB`;
  const isIpa = entry.store_size !== null || entry.store_require !== null;
  const storeSize = entry.store_size === null ? null : `${formatMb(entry.store_size)} MB`;
  const differs = [
    storeSize !== null && storeSize !== size ? storeSize : null,
    entry.store_require !== null && entry.store_require !== entry.require
      ? `iOS ${entry.store_require}`
      : null,
  ].filter((d): d is string => d !== null);
  return { size, isIpa, storeNote: differs.length ? `The store lists ${differs.join(' and ')}.` : null };
}

/** A moment in the viewer's zone, to the minute: 'Nov 23, 2026, 10:00 AM' (lib/dates.tsx). */
export { formatMoment } from '../lib/dates';
