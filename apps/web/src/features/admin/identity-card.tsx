import Alert from 'react-bootstrap/Alert';
import Badge from 'react-bootstrap/Badge';
import { useQuery } from '@tanstack/react-query';
import { useFailureAlert } from '../../lib/use-failure-alert';
import { formatTime, identityQuery } from './queries';

/** The dev identity's CA certificate, which checks the signatures it makes. */
export const DEV_CA_URL = '/api/admin/identity/ca.pem';

/**
 * The identity that registers devices and signs: the operator's Apple developer account, or the
 * dev identity, which runs the whole pipeline but whose output real devices will not install. The
 * latter is marked so nobody takes a working pipeline for working installs.
 */
export function IdentityCard() {
  const identity = useQuery(identityQuery);
  useFailureAlert(identity.error);
  const info = identity.data;
  if (!info) return null;
  const certificate = info.certificate_name
    ? `${info.certificate_name}, until ${formatTime(info.certificate_expires_at)}`
    : 'made on first use';
  // As its issuer's OCSP responder last said (docs/sign-service.md, Install preflight).
  const status =
    info.certificate_status === 'revoked'
      ? `revoked on ${formatTime(info.certificate_revoked_at)}`
      : info.certificate_status;
  return (
    <Alert variant={info.installable ? 'light' : 'warning'} data-testid="signing-identity" className="mb-3">
      <div className="d-flex flex-wrap align-items-center gap-2 mb-1">
        <strong>Signing identity</strong>
        {info.kind === 'dev' ? (
          // A badge does not wrap by itself: on a phone this one is wider than the screen.
          <Badge bg="warning" text="dark" className="text-wrap text-start">
            Dev identity: real devices will not install its apps
          </Badge>
        ) : (
          <Badge bg="success-subtle" text="success-emphasis" className="border border-success-subtle">
            Apple developer account
          </Badge>
        )}
      </div>
      <div>{info.description}</div>
      <div className="small text-body-secondary">
        {info.team_id && <>Team {info.team_id} · </>}
        Certificate: {certificate}
        {info.certificate_name && (
          <span
            data-testid="certificate-status"
            className={info.certificate_status === 'revoked' ? 'text-danger fw-semibold' : undefined}
          >
            {' · '}Status: {status}
            {info.certificate_checked_at && <>, checked {formatTime(info.certificate_checked_at)}</>}
          </span>
        )}
        {info.kind === 'dev' && (
          <>
            {' · '}
            {/* Anyone can then check what it signed: openssl cms -verify -CAfile sideport-dev-ca.pem. */}
            <a href={DEV_CA_URL} download className="alert-link">
              Download its CA (PEM)
            </a>
          </>
        )}
      </div>
    </Alert>
  );
}
