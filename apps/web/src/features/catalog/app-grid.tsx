import { lazy, Suspense, useCallback, useEffect, useState } from 'react';
import { useLocation, useNavigate } from 'react-router';
import { useQuery } from '@tanstack/react-query';
import type { AppEntry } from '@sideport/contracts';
import { useClientStore } from '../../lib/store';
import type { VersionTarget } from '../versions/version-target';
import { AppCard } from './app-card';
import { updatesBadgeQuery } from './queries';
import type { ListKind } from './status-buttons';
import { useCardActions } from './use-card-actions';

// The version modal (with its sign and download flows) loads with the first View or Downgrade.
const VersionModal = lazy(() =>
  import('../versions/version-modal').then((m) => ({ default: m.VersionModal })),
);

/** The history entry an open version modal adds: Back closes the modal, not the page. */
const MODAL_STATE = 'versionModal';
const isModalEntry = (state: unknown) => typeof state === 'object' && state !== null && MODAL_STATE in state;

/**
 * 1, 2 or 3 columns by width (Bootstrap's xs / md / lg), and the version modal of its cards. The
 * open modal is a history entry of the same address: Back (the browser's, or a phone's swipe)
 * closes it; its Close goes back over that entry.
 */
export function AppGrid({ entries, list }: { entries: AppEntry[]; list: ListKind }) {
  const isAdmin = useClientStore((s) => s.grade > 0);
  const isLogin = useClientStore((s) => s.isLogin);
  const updates = useQuery(updatesBadgeQuery(isLogin));
  const updatable = new Set(
    (updates.data ?? []).filter((u) => u.state !== 'Ready').map((u) => `${u.country}-${u.app_id}`),
  );
  const [versions, setVersions] = useState<VersionTarget | null>(null);
  const location = useLocation();
  const navigate = useNavigate();
  const isModalShown = isModalEntry(location.state);
  const openVersions = useCallback(
    (target: VersionTarget) => {
      setVersions(target);
      if (!isModalShown) void navigate(location, { state: { [MODAL_STATE]: true } });
    },
    [isModalShown, location, navigate],
  );
  const closeVersions = useCallback(() => {
    if (isModalShown) void navigate(-1);
    else setVersions(null);
  }, [isModalShown, navigate]);
  // Back left the modal's entry: close it.
  useEffect(() => {
    if (!isModalShown) setVersions(null);
  }, [isModalShown]);
  const onAction = useCardActions(list, openVersions);
  return (
    <>
      <div className="row row-cols-1 row-cols-md-2 row-cols-lg-3 g-3 app-grid">
        {entries.map((entry) => (
          <div className="col" key={`${entry.country}-${entry.app_id}-${entry.app_ver_id ?? 'app'}`}>
            <AppCard
              entry={entry}
              list={list}
              isAdmin={isAdmin}
              onAction={onAction}
              hasUpdate={updatable.has(`${entry.country}-${entry.app_id}`)}
            />
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
