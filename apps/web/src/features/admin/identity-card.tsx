import { useState } from 'react';
import Alert from 'react-bootstrap/Alert';
import Badge from 'react-bootstrap/Badge';
import Button from 'react-bootstrap/Button';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { adminKeys } from '../../entries/query-keys';
import { alertFailure } from '../../lib/api';
import { useFailureAlert } from '../../lib/use-failure-alert';
import { formatTime, identityQuery, rotateFeatherCertificate } from './queries';

/** The dev identity's CA certificate, which checks the signatures it makes. */
export const DEV_CA_URL = '/api/admin/identity/ca.pem';

/**
 * The identity that registers devices and signs: the operator's Apple developer account, or the
 * dev identity, which runs the whole pipeline but whose output real devices will not install. The
 * latter is marked so nobody takes a working pipeline for working installs.
 */
export function IdentityCard() {
  const queryClient = useQueryClient();
  const identity = useQuery(identityQuery);
  const [isRotating, setRotating] = useState(false);
  useFailureAlert(identity.error);
  const info = identity.data;
  if (!info) return null;
  // Feather is handed a certificate of its own: after a leak, a new one; the old can then be revoked.
  const rotateFeather = async () => {
    if (
      !window.confirm('Make a new Feather certificate? Feather Cert downloads get the new one from now on.')
    )
      return;
    setRotating(true);
    try {
      await rotateFeatherCertificate();
    } catch (error) {
      alertFailure(error);
    } finally {
      setRotating(false);
    }
    void queryClient.invalidateQueries({ queryKey: adminKeys.identity });
  };
  const featherCertificate = info.feather_certificate_name
    ? `${info.feather_certificate_name} (serial ${info.feather_certificate_serial}), until ${formatTime(info.feather_certificate_expires_at)}`
    : 'made on first use';
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
      {info.certificate_chain.length > 0 && (
        // What every signature carries, as codesign writes it: the certificate, its issuer, the root.
        <div className="small text-body-secondary text-break" data-testid="certificate-chain">
          Chain carried in each signature:{' '}
          {info.certificate_chain.map((c, i) => (
            <span key={`${i}-${c.name}`}>
              {i > 0 && ' → '}
              {c.name} (until {formatTime(c.expires_at)})
            </span>
          ))}
        </div>
      )}
      <div className="small text-body-secondary d-flex flex-wrap align-items-center gap-2 mt-1">
        <span data-testid="feather-certificate">
          Feather certificate (handed out by Feather Cert, never the signing one): {featherCertificate}
        </span>
        <Button size="sm" variant="outline-dark" disabled={isRotating} onClick={() => void rotateFeather()}>
          Rotate
        </Button>
      </div>
    </Alert>
  );
}
