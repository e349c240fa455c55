import { useEffect } from 'react';
import Button from 'react-bootstrap/Button';
import Modal from 'react-bootstrap/Modal';
import Spinner from 'react-bootstrap/Spinner';
import Stack from 'react-bootstrap/Stack';
import { useQuery } from '@tanstack/react-query';
import type { AppEntry } from '@sideport/contracts';
import { alertFailure } from '../../lib/api';
import { MODAL_NOTE } from './messages';
import { historyQuery, versionsQuery, type LiveEntry } from './queries';
import { VersionCard } from './version-card';

/** View lists the versions Sideport knows; Downgrade the store's history, never-requested ones Available. */
export interface VersionTarget {
  entry: Pick<AppEntry, 'country' | 'app_id' | 'name'>;
  mode: 'view' | 'downgrade';
}

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
            <Spinner animation="border" role="status" aria-label="Loading versions" />
          </div>
        ) : (
          <Stack gap={2}>
            {versions.map((entry: LiveEntry) => (
              <VersionCard key={`${entry.app_ver_id ?? 'app'}`} entry={entry} onClose={onClose} />
            ))}
          </Stack>
        )}
        {(versions === undefined || versions.length === 0) && (
          <div className="d-flex align-items-center justify-content-between gap-2 mt-2">
            <span className="text-body-secondary">{versions ? 'No list now.' : ''}</span>
            <Button size="sm" variant="secondary" onClick={onClose}>
              Close
            </Button>
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
