import type { AppEntry } from '@sideport/contracts';

/** View lists the versions Sideport knows; Downgrade the store's history, never-requested ones Available. */
export interface VersionTarget {
  entry: Pick<AppEntry, 'country' | 'app_id' | 'name'>;
  mode: 'view' | 'downgrade';
}
