import { SIGN_AGAIN } from './messages';

/**
 * Why an install of a mode was refused before the phone refused it (the server's sentence: a
 * revoked certificate, an expired profile; docs/sign-service.md, Install preflight), with 'Sign
 * again', which asks for a new sign as the 406's confirmation does. It stays until acted on.
 */
export function PreflightNotice({
  reason,
  modeName,
  onSignAgain,
  onClose,
}: {
  reason: string;
  modeName: string;
  onSignAgain: () => void;
  onClose: () => void;
}) {
  return (
    <div
      role="alert"
      aria-label={`${modeName} install refused`}
      className="alert alert-warning small py-2 px-2 mt-1 mb-0 d-flex flex-wrap align-items-center gap-2"
    >
      <span className="flex-grow-1">{reason}</span>
      <button type="button" className="btn btn-sm btn-warning" onClick={onSignAgain}>
        {SIGN_AGAIN}
      </button>
      <button type="button" className="btn-close" aria-label="Close" onClick={onClose} />
    </div>
  );
}
