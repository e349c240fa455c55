import { useState } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import type { AppEntry, SignType } from '@sideport/contracts';
import { PhoneQr, phoneInstallUrl } from '../../components/phone-qr';
import { usePublicConfig } from '../../lib/config';
import { isIosDevice } from '../../lib/device';
import { PreflightNotice } from './preflight-notice';
import {
  installSigned,
  isResigning,
  requestSign,
  RESIGNING_LABEL,
  SIGN_BUTTON_LABELS,
  SIGN_MODES,
  signAgain,
  signStatusOf,
} from './sign';

/**
 * One button per signing mode of a Done version, by the caller's status of that mode (docs/product.md,
 * States), each with a line on what the mode does. A mode this server does not offer (GET
 * /api/config) is disabled and says why, so nobody confirms a sign the server then refuses.
 * Install goes to the itms-services URL on iOS; elsewhere it shows a QR code of it for the iPhone.
 * An install the server refuses before the phone would says why under its mode, with 'Sign again';
 * a mode recovery signs again shows 'Re-signing' until it is Done.
 */
export function SignButtons({ entry }: { entry: AppEntry }) {
  const queryClient = useQueryClient();
  const config = usePublicConfig();
  const [phoneUrl, setPhoneUrl] = useState<{ url: string; mode: string } | null>(null);
  const [refusals, setRefusals] = useState<Partial<Record<SignType, string>>>({});
  const setRefusal = (type: SignType, reason?: string) =>
    setRefusals(({ [type]: _shown, ...others }) =>
      reason === undefined ? others : { ...others, [type]: reason },
    );
  return (
    <>
      <div className="d-grid gap-2 sign-buttons">
        {SIGN_MODES.map((mode) => {
          const status = signStatusOf(entry, mode.type);
          const resigning = isResigning(entry, mode.type);
          const refusal = refusals[mode.type];
          const isOffered = !config || config.signTypes.includes(mode.type);
          const open = (url: string) =>
            isIosDevice()
              ? window.location.assign(url)
              : setPhoneUrl({ url: phoneInstallUrl(url), mode: mode.name });
          const onClick = !isOffered
            ? undefined
            : status === 'No'
              ? () => void requestSign(queryClient, entry, mode)
              : status === 'Done'
                ? () =>
                    void installSigned(queryClient, entry, mode, open, (reason) =>
                      setRefusal(mode.type, reason),
                    )
                : undefined;
          const noteId = `sign-note-${entry.app_ver_id}-${mode.type}`;
          return (
            <div
              key={mode.type}
              role="group"
              aria-label={mode.name}
              className="sign-mode"
              data-offered={isOffered}
            >
              <div className="d-flex align-items-center gap-2">
                <span className="fw-semibold small" style={{ minWidth: '4.5rem' }}>
                  {mode.name}
                </span>
                <button
                  type="button"
                  className={`btn btn-sm ${status === 'Done' ? 'btn-success' : status === 'No' ? 'btn-outline-primary' : 'btn-outline-info'}`}
                  disabled={!onClick}
                  onClick={onClick}
                  aria-describedby={noteId}
                >
                  {resigning ? RESIGNING_LABEL : SIGN_BUTTON_LABELS[status]}
                </button>
              </div>
              {refusal !== undefined && (
                <PreflightNotice
                  reason={refusal}
                  modeName={mode.name}
                  onSignAgain={() => {
                    setRefusal(mode.type);
                    void signAgain(queryClient, entry, mode);
                  }}
                  onClose={() => setRefusal(mode.type)}
                />
              )}
              <div id={noteId} className="small text-body-secondary sign-note">
                {isOffered ? mode.explanation : `${mode.notOffered} ${mode.explanation}`}
              </div>
            </div>
          );
        })}
      </div>
      {phoneUrl && (
        <PhoneQr
          url={phoneUrl.url}
          label={`install ${entry.name} ${entry.version} (${phoneUrl.mode}) on your iPhone`}
          instruction={`Installing works on the iPhone itself: scan this QR code with its camera and open the link there. It works for a few minutes.`}
        />
      )}
    </>
  );
}
