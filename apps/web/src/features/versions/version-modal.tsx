import { useEffect } from 'react';
import Modal from 'react-bootstrap/Modal';
import { useQuery } from '@tanstack/react-query';
import { alertFailure } from '../../lib/api';
import { MODAL_NOTE } from './messages';
import type { LiveEntry } from '../../entries/live-entry';
import { historyQuery, versionsQuery } from './queries';
import { VersionCard } from './version-card';
import type { VersionTarget } from './version-target';

export type { VersionTarget };

function useVersionList(target: VersionTarget) {
  const { country, app_id } = target.entry;
  const view = useQuery({ ...versionsQuery(country, app_id), enabled: target.mode === 'view' });
  const history = useQuery({ ...historyQuery(country, app_id), enabled: target.mode === 'downgrade' });
  return target.mode === 'view'
    ? { versions: view.data, name: target.entry.name, error: view.error }
    : {
        versions: history.data?.version_list,
        name: history.data?.name ?? target.entry.name,
        error: history.error,
      };
}

/**
 * The version modal of docs/product.md, Screens: static (Escape and a click beside it do not close it; each
 * card's Close does), titled with the app name and the note that the normal version shows once
 * decrypted. Statuses follow live events through the query cache.
 */
function VersionModalBody({ target, onClose }: { target: VersionTarget; onClose: () => void }) {
  const { versions, name, error } = useVersionList(target);
  useEffect(() => {
    if (!error) return;
    alertFailure(error);
    onClose();
  }, [error, onClose]);

  return (
    <>
      <Modal.Header>
        <Modal.Title id="version-modal-title" className="fs-5">
          <div className="version-modal-name">{name}</div>
          <div className="small fw-normal text-body-secondary version-modal-note">{MODAL_NOTE}</div>
        </Modal.Title>
      </Modal.Header>
      <Modal.Body>
        {versions === undefined ? (
          <div className="text-center my-4">
            <div className="spinner-border" role="status" aria-label="Loading versions" />
          </div>
        ) : (
          <div className="d-grid gap-2">
            {versions.map((entry: LiveEntry) => (
              <VersionCard key={`${entry.app_ver_id ?? 'app'}`} entry={entry} onClose={onClose} />
            ))}
          </div>
        )}
        {(versions === undefined || versions.length === 0) && (
          <div className="d-flex align-items-center justify-content-between gap-2 mt-2">
            <span className="text-body-secondary">{versions ? 'No list now.' : ''}</span>
            <button type="button" className="btn btn-sm btn-secondary" onClick={onClose}>
              Close
            </button>
          </div>
        )}
      </Modal.Body>
    </>
  );
}

export function VersionModal({ target, onClose }: { target: VersionTarget | null; onClose: () => void }) {
  return (
    <Modal
      show={target !== null}
      onHide={onClose}
      backdrop="static"
      keyboard={false}
      size="lg"
      scrollable
      aria-labelledby="version-modal-title"
      data-testid="version-modal"
    >
      {target && <VersionModalBody target={target} onClose={onClose} />}
    </Modal>
  );
}
