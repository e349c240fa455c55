import { useCallback, useState } from 'react';
import type { AppEntry } from '@sideport/contracts';
import Col from 'react-bootstrap/Col';
import Row from 'react-bootstrap/Row';
import { useClientStore } from '../../lib/store';
import { VersionModal, type VersionTarget } from '../versions/version-modal';
import { AppCard } from './app-card';
import type { ListKind } from './status-buttons';
import { useCardActions } from './use-card-actions';

/** 1, 2 or 3 columns by width (Bootstrap's xs / md / lg), and the version modal of its cards. */
export function AppGrid({
  entries,
  list,
  emptyText,
}: {
  entries: AppEntry[];
  list: ListKind;
  emptyText: string;
}) {
  const isAdmin = useClientStore((s) => s.grade > 0);
  const [versions, setVersions] = useState<VersionTarget | null>(null);
  const closeVersions = useCallback(() => setVersions(null), []);
  const onAction = useCardActions(list, setVersions);
  return (
    <>
      {entries.length === 0 ? (
        <p className="text-center text-body-secondary my-5 empty-text">{emptyText}</p>
      ) : (
        <Row xs={1} md={2} lg={3} className="g-3 app-grid">
          {entries.map((entry) => (
            <Col key={`${entry.country}-${entry.app_id}-${entry.app_ver_id ?? 'app'}`}>
              <AppCard entry={entry} list={list} isAdmin={isAdmin} onAction={onAction} />
            </Col>
          ))}
        </Row>
      )}
      <VersionModal target={versions} onClose={closeVersions} />
    </>
  );
}
