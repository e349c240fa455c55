import { useQueryClient } from '@tanstack/react-query';
import { ProgressLine } from '../../components/progress-line';
import { useClientStore } from '../../lib/store';
import { When } from '../../lib/dates';
import { entryFacts } from '../../entries/format';
import { progressButton } from '../../entries/progress-button';
import { deleteEntry, moveToPremiumQueue, requestDecrypt } from './actions';
import { openDownload } from './download';
import type { LiveEntry } from '../../entries/live-entry';
import { CapabilityNote } from './capability-note';
import { SignButtons } from './sign-buttons';

/**
 * One version in the version modal (docs/product.md, Screens): its number and Close; Done shows Download,
 * Delete for admins and the signing modes; Available (from Downgrade) offers Decrypt; the rest
 * shows where the entry stands in the queue. Its size and minimum iOS say whose they are.
 */
export function VersionCard({ entry, onClose }: { entry: LiveEntry; onClose: () => void }) {
  const queryClient = useQueryClient();
  const isAdmin = useClientStore((s) => s.grade > 0);
  const isDone = entry.status === 'Done' && entry.app_ver_id !== null;
  const progress = progressButton(entry);
  const facts = entryFacts(entry);
  const details = [facts.size && `${facts.size}${facts.isIpa ? ' (IPA)' : ''}`, `iOS ${entry.require}+`]
    .filter(Boolean)
    .join(' · ');
  return (
    <div className="card" data-testid="version-card" data-status={entry.status}>
      <div className="card-body">
        <div className="d-flex flex-wrap align-items-center gap-2">
          <div className="me-auto">
            <div className="fw-semibold version-number">{entry.version}</div>
            <div className="small text-body-secondary version-details">{details}</div>
            {facts.storeNote && (
              <div className="small text-body-secondary version-store-note">{facts.storeNote}</div>
            )}
            {entry.decrypted_at && (
              <div className="small text-body-secondary">
                Decrypted <When iso={entry.decrypted_at} />
              </div>
            )}
            {entry.status === 'Not' && entry.reason && (
              <div className="small text-danger-emphasis version-not-reason">{entry.reason}</div>
            )}
          </div>
          {isDone && (
            <button
              type="button"
              className="btn btn-sm btn-primary"
              onClick={() => void openDownload(entry.app_id, entry.app_ver_id!)}
            >
              Download
            </button>
          )}
          {isDone && isAdmin && (
            <button
              type="button"
              className="btn btn-sm btn-danger"
              onClick={() => void deleteEntry(queryClient, entry, 'done')}
            >
              Delete
            </button>
          )}
          {entry.status === 'Available' && entry.app_ver_id !== null && (
            <button
              type="button"
              className="btn btn-sm btn-success"
              onClick={() => void requestDecrypt(queryClient, entry, 'version')}
            >
              Decrypt
            </button>
          )}
          {progress && (
            <button
              type="button"
              className={`btn btn-sm btn-${progress.variant}`}
              disabled={progress.disabled}
              onClick={progress.action ? () => void moveToPremiumQueue(queryClient, entry) : undefined}
            >
              {progress.label}
            </button>
          )}
          <button type="button" className="btn btn-sm btn-secondary" onClick={onClose}>
            Close
          </button>
        </div>
        {!isDone && <ProgressLine progress={entry.progress} label={`Progress of ${entry.version}`} />}
        {isDone && (
          <div className="mt-3">
            <CapabilityNote entry={entry} />
            <SignButtons entry={entry} />
          </div>
        )}
      </div>
    </div>
  );
}
