import { useState } from 'react';
import Button from 'react-bootstrap/Button';
import Modal from 'react-bootstrap/Modal';
import type { FeatherCertAnswer } from '@sideport/contracts';
import { PhoneQr, phoneInstallUrl } from '../../components/phone-qr';
import { alertFailure } from '../../lib/api';
import { usePublicConfig } from '../../lib/config';
import { isIosDevice } from '../../lib/device';
import { certPasswordNotice, FEATHER_NOT_OFFERED } from './messages';
import { featherCert, featherInstall } from './queries';

/**
 * Feather Install: the operator's Feather signed for the person's devices, as an itms-services URL,
 * followed on iOS and handed to `showForPhone` elsewhere. The server may wait for that sign (up to
 * a minute) before it answers.
 */
async function installFeather(showForPhone: (url: string) => void) {
  try {
    const { url } = await featherInstall();
    if (isIosDevice()) window.location.assign(url);
    else showForPhone(phoneInstallUrl(url));
  } catch (error) {
    alertFailure(error);
  }
}

/**
 * 'Feather Install' and 'Feather Cert' (docs/product.md, Screens). The cert is a zip of a .p12 and the
 * person's profile; its password is new each time and only in this answer, so it stays on screen
 * with the cert-password notice of docs/product.md until closed, beside the zip's link. A server
 * without Feather (GET /api/config `feather` false) disables both and says why, as for sign modes.
 */
export function FeatherButtons() {
  const [cert, setCert] = useState<FeatherCertAnswer | null>(null);
  const [busy, setBusy] = useState<'install' | 'cert' | null>(null);
  const [phoneUrl, setPhoneUrl] = useState<string | null>(null);
  const config = usePublicConfig();
  const isOffered = config?.feather !== false;
  const whileBusy = (which: 'install' | 'cert', work: () => Promise<void>) => {
    setBusy(which);
    void work().finally(() => setBusy(null));
  };

  const fetchCert = async () => {
    try {
      setCert(await featherCert());
    } catch (error) {
      alertFailure(error);
    }
  };

  return (
    <>
      <Button
        variant="outline-secondary"
        disabled={!isOffered || busy === 'install'}
        aria-describedby={isOffered ? undefined : 'feather-not-offered'}
        onClick={() => whileBusy('install', () => installFeather(setPhoneUrl))}
      >
        Feather Install
      </Button>
      <Button
        variant="outline-secondary"
        disabled={!isOffered || busy === 'cert'}
        aria-describedby={isOffered ? undefined : 'feather-not-offered'}
        onClick={() => whileBusy('cert', fetchCert)}
      >
        Feather Cert
      </Button>
      {!isOffered && (
        <p id="feather-not-offered" className="w-100 small text-body-secondary mb-0">
          {FEATHER_NOT_OFFERED}
        </p>
      )}
      {phoneUrl && (
        <div className="w-100">
          <PhoneQr
            url={phoneUrl}
            label="install Feather on your iPhone"
            instruction="Installing works on the iPhone itself: scan this QR code with its camera and open the link there. It works for a few minutes."
          />
        </div>
      )}
      <Modal show={cert !== null} onHide={() => setCert(null)} aria-labelledby="feather-cert-title">
        <Modal.Header closeButton>
          <Modal.Title id="feather-cert-title" className="fs-5">
            Feather Cert
          </Modal.Title>
        </Modal.Header>
        {cert && (
          <Modal.Body>
            <p data-testid="cert-password-notice">{certPasswordNotice(cert.password)}</p>
            <p className="font-monospace fs-5 user-select-all" aria-label="Cert password">
              {cert.password}
            </p>
            <Button as="a" href={cert.url} download>
              Download the certificate
            </Button>
          </Modal.Body>
        )}
      </Modal>
    </>
  );
}
