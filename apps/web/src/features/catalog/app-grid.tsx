import { lazy, Suspense, useCallback, useState } from 'react';
import type { AppEntry } from '@sideport/contracts';
import { useClientStore } from '../../lib/store';
import type { VersionTarget } from '../versions/version-target';
import { AppCard } from './app-card';
import type { ListKind } from './status-buttons';
import { useCardActions } from './use-card-actions';

// The version modal (with its sign and download flows) loads with the first View or Downgrade.
const VersionModal = lazy(() =>
  import('../versions/version-modal').then((m) => ({ default: m.VersionModal })),
);

/** 1, 2 or 3 columns by width (Bootstrap's xs / md / lg), and the version modal of its cards. */
export function AppGrid({ entries, list }: { entries: AppEntry[]; list: ListKind }) {
  const isAdmin = useClientStore((s) => s.grade > 0);
  const [versions, setVersions] = useState<VersionTarget | null>(null);
  const closeVersions = useCallback(() => setVersions(null), []);
  const onAction = useCardActions(list, setVersions);
  return (
    <>
      <div className="row row-cols-1 row-cols-md-2 row-cols-lg-3 g-3 app-grid">
        {entries.map((entry) => (
          <div className="col" key={`${entry.country}-${entry.app_id}-${entry.app_ver_id ?? 'app'}`}>
            <AppCard entry={entry} list={list} isAdmin={isAdmin} onAction={onAction} />
          </div>
        ))}
      </div>
      {versions && (
        <Suspense fallback={null}>
          <VersionModal target={versions} onClose={closeVersions} />
        </Suspense>
      )}
    </>
  );
}
