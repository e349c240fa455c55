import type { AppEntry } from '@sideport/contracts';
import Col from 'react-bootstrap/Col';
import Row from 'react-bootstrap/Row';
import { useClientStore } from '../../lib/store';
import { AppCard } from './app-card';
import type { ListKind } from './status-buttons';
import { useCardActions } from './use-card-actions';

/** 1, 2 or 3 columns by width (Bootstrap's xs / md / lg). */
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
  const onAction = useCardActions(list);
  if (entries.length === 0)
    return <p className="text-center text-body-secondary my-5 empty-text">{emptyText}</p>;
  return (
    <Row xs={1} md={2} lg={3} className="g-3 app-grid">
      {entries.map((entry) => (
        <Col key={`${entry.country}-${entry.app_id}-${entry.app_ver_id ?? 'app'}`}>
          <AppCard entry={entry} list={list} isAdmin={isAdmin} onAction={onAction} />
        </Col>
      ))}
    </Row>
  );
}
