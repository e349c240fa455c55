import { When } from '../../lib/dates';
import Badge from 'react-bootstrap/Badge';
import Button from 'react-bootstrap/Button';
import { useInfiniteQuery, useQueryClient } from '@tanstack/react-query';
import type { AdminQueueEntry } from '@sideport/contracts';
import { adminKeys } from '../../entries/query-keys';
import { alertFailure } from '../../lib/api';
import { useFailureAlert } from '../../lib/use-failure-alert';
import { deleteEntry } from '../versions/actions';
import { AdminTable } from './admin-table';
import { MoreButton } from './more-button';
import { adminQueueQuery, retryQueued } from './queries';

const QUEUE_COLUMNS = [
  { label: 'App' },
  { label: 'Status' },
  { label: 'Attempts' },
  { label: 'Last reason' },
  { label: 'Agent', isWideOnly: true },
  { label: 'Requested', isWideOnly: true },
  { label: 'Actions', isLabelHidden: true, isWideOnly: true },
];

/**
 * The decrypt queue as the operator sees it: every waiting, working and failed entry with its
 * failed attempts, lost leases, last reason and agent; retry gives a failed or stuck entry its
 * attempts anew.
 */
export function QueuePanel() {
  const queryClient = useQueryClient();
  const queue = useInfiniteQuery(adminQueueQuery);
  useFailureAlert(queue.error);
  const entries = queue.data?.pages.flatMap((p) => p.entries) ?? [];

  const retry = async (entry: AdminQueueEntry) => {
    try {
      await retryQueued(entry.seq);
    } catch (error) {
      alertFailure(error);
    }
    void queryClient.invalidateQueries({ queryKey: adminKeys.queue });
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

  return (
    <section aria-label="Queue">
      <AdminTable
        testId="queue-table"
        columns={QUEUE_COLUMNS}
        isEmpty={queue.isSuccess && entries.length === 0}
      >
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
            <td className="text-nowrap">
              {entry.attempts}
              {/* Lost leases (agents killed or stopped mid-job) are not failures, and are counted apart. */}
              {entry.lost_leases > 0 && (
                <div className="small text-body-secondary">
                  {entry.lost_leases} lost {entry.lost_leases === 1 ? 'lease' : 'leases'}
                </div>
              )}
            </td>
            <td className="small">{entry.reason ?? '-'}</td>
            <td className="d-none d-md-table-cell">{entry.agent ?? '-'}</td>
            <td className="d-none d-md-table-cell text-nowrap small">
              <When iso={entry.requested_at} none="never" />
            </td>
            <td className="d-none d-md-table-cell">{actions(entry)}</td>
          </tr>
        ))}
      </AdminTable>
      <MoreButton query={queue} />
    </section>
  );
}
