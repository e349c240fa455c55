import Button from 'react-bootstrap/Button';
import Card from 'react-bootstrap/Card';
import { useQueryClient } from '@tanstack/react-query';
import { ProgressLine } from '../../components/progress-line';
import { useClientStore } from '../../lib/store';
import { progressButton } from '../catalog/status-buttons';
import { deleteEntry, moveToPremiumQueue, requestDecrypt } from './actions';
import { openDownload } from './download';
import type { LiveEntry } from './queries';
import { SignButtons } from './sign-buttons';

/**
 * One version in the version modal (docs/product.md, Screens): its number and Close; Done shows Download,
 * Delete for admins and the signing modes; Available (from Downgrade) offers Decrypt; the rest
 * shows where the entry stands in the queue.
 */
export function VersionCard({ entry, onClose }: { entry: LiveEntry; onClose: () => void }) {
  const queryClient = useQueryClient();
  const isAdmin = useClientStore((s) => s.grade > 0);
  const isDone = entry.status === 'Done' && entry.app_ver_id !== null;
  const progress = progressButton(entry.status);
  const details = [entry.size !== null && `${entry.size} MB`, `iOS ${entry.require}+`]
    .filter(Boolean)
    .join(' · ');

  return (
    <Card data-testid="version-card" data-status={entry.status}>
      <Card.Body>
        <div className="d-flex flex-wrap align-items-center gap-2">
          <div className="me-auto">
            <div className="fw-semibold version-number">{entry.version}</div>
            <div className="small text-body-secondary">{details}</div>
          </div>
          {isDone && (
            <Button
              size="sm"
              variant="primary"
              onClick={() => void openDownload(entry.app_id, entry.app_ver_id!)}
            >
              Download
            </Button>
          )}
          {isDone && isAdmin && (
            <Button size="sm" variant="danger" onClick={() => void deleteEntry(queryClient, entry, 'done')}>
              Delete
            </Button>
          )}
          {entry.status === 'Available' && entry.app_ver_id !== null && (
            <Button
              size="sm"
              variant="success"
              onClick={() => void requestDecrypt(queryClient, entry, 'version')}
            >
              Decrypt
            </Button>
          )}
          {progress && (
            <Button
              size="sm"
              variant={progress.variant}
              disabled={progress.disabled}
              onClick={progress.action ? () => void moveToPremiumQueue(queryClient, entry) : undefined}
            >
              {progress.label}
            </Button>
          )}
          <Button size="sm" variant="secondary" onClick={onClose}>
            Close
          </Button>
        </div>
        {!isDone && <ProgressLine progress={entry.progress} label={`Progress of ${entry.version}`} />}
        {isDone && (
          <div className="mt-2">
            <SignButtons entry={entry} />
          </div>
        )}
      </Card.Body>
    </Card>
  );
}
