import { useEffect } from 'react';
import Badge from 'react-bootstrap/Badge';
import Button from 'react-bootstrap/Button';
import Table from 'react-bootstrap/Table';
import { useInfiniteQuery, useQueryClient } from '@tanstack/react-query';
import type { AdminQueueEntry } from '@sideport/contracts';
import { alertFailure, api } from '../../lib/api';
import { deleteEntry } from '../versions/actions';
import { MoreButton } from './more-button';
import { adminQueueQuery, formatTime } from './queries';

/**
 * The decrypt queue as the operator sees it: every waiting, working and failed entry with its
 * attempts, last reason and agent; retry gives a failed or stuck entry its attempts anew.
 */
export function QueuePanel() {
  const queryClient = useQueryClient();
  const queue = useInfiniteQuery(adminQueueQuery);
  useEffect(() => {
    if (queue.error) alertFailure(queue.error);
  }, [queue.error]);
  const entries = queue.data?.pages.flatMap((p) => p.entries) ?? [];

  const retry = async (entry: AdminQueueEntry) => {
    try {
      await api(`/api/admin/queue/${entry.seq}/retry`, { method: 'POST' });
    } catch (error) {
      alertFailure(error);
    }
    void queryClient.invalidateQueries({ queryKey: ['admin', 'queue'] });
  };

  const actions = (entry: AdminQueueEntry) => (
    <div className="d-flex gap-1 justify-content-md-end">
      <Button
        size="sm"
        variant="outline-primary"
        aria-label={`Retry ${entry.name}`}
        onClick={() => void retry(entry)}
      >
        Retry
      </Button>
      <Button
        size="sm"
        variant="outline-danger"
        aria-label={`Delete ${entry.name}`}
        onClick={() => void deleteEntry(queryClient, entry, 'queued')}
      >
        Delete
      </Button>
    </div>
  );

  if (queue.isSuccess && entries.length === 0) return <p className="text-body-secondary">No list now.</p>;
  return (
    <section aria-label="Queue">
      <Table responsive size="sm" className="align-middle" data-testid="queue-table">
        <thead>
          <tr>
            <th scope="col">App</th>
            <th scope="col">Status</th>
            <th scope="col">Attempts</th>
            <th scope="col">Last reason</th>
            <th scope="col" className="d-none d-md-table-cell">
              Agent
            </th>
            <th scope="col" className="d-none d-md-table-cell">
              Requested
            </th>
            <th scope="col" className="position-relative d-none d-md-table-cell">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {entries.map((entry) => (
            <tr key={entry.seq} data-testid="queue-row">
              <td>
                <div className="fw-semibold">{entry.name}</div>
                <div className="small text-body-secondary text-nowrap">
                  {entry.country} · {entry.app_id}
                  {entry.version ? ` · ${entry.version}` : ''}
                </div>
                {/* On a phone the actions sit under the name, not at the far end of a scrolled table. */}
                <div className="d-md-none mt-1">{actions(entry)}</div>
              </td>
              <td className="text-nowrap">
                {entry.status}{' '}
                {entry.premium && (
                  <Badge bg="warning" text="dark">
                    premium
                  </Badge>
                )}
              </td>
              <td>{entry.attempts}</td>
              <td className="small">{entry.reason ?? '-'}</td>
              <td className="d-none d-md-table-cell">{entry.agent ?? '-'}</td>
              <td className="d-none d-md-table-cell text-nowrap small">{formatTime(entry.requested_at)}</td>
              <td className="d-none d-md-table-cell">{actions(entry)}</td>
            </tr>
          ))}
        </tbody>
      </Table>
      <MoreButton query={queue} />
    </section>
  );
}
