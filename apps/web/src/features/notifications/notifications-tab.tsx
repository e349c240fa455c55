import { useEffect, useState } from 'react';
import Form from 'react-bootstrap/Form';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { NOTIFICATION_KIND_LABELS, NOTIFICATION_KINDS } from '@sideport/contracts';
import { notificationKeys } from '../../entries/query-keys';
import { alertFailure } from '../../lib/api';
import { isIosDevice } from '../../lib/device';
import { canPush, currentSubscription, disablePush, enablePush, isStandalone } from './push';
import { choicesQuery, setChoice } from './queries';

/**
 * The one-screen guide for an iPhone: Web Push reaches only the web app added to the Home Screen
 * (iOS 16.4 and later), and there the person allows notifications.
 */
function IphoneGuide() {
  return (
    <div className="alert alert-info iphone-guide" data-testid="iphone-guide">
      <div className="fw-semibold mb-1">Notifications on an iPhone</div>
      <ol className="mb-0 ps-3 small">
        <li>In Safari, tap the Share button (the square with an arrow).</li>
        <li>Choose Add to Home Screen, then Add.</li>
        <li>Open Sideport from its new icon on the Home Screen and sign in.</li>
        <li>Come back here and tap Turn on, then Allow.</li>
      </ol>
      <div className="small mt-1 text-body-secondary">
        iOS 16.4 or later. The bell above lists them either way.
      </div>
    </div>
  );
}

/** My page, Notifications tab: this browser's push on or off, and each kind's choice. */
export function NotificationsTab() {
  const choices = useQuery(choicesQuery);
  const queryClient = useQueryClient();
  const [isOn, setOn] = useState<boolean | null>(null);
  const [isBusy, setBusy] = useState(false);
  useEffect(() => {
    void currentSubscription().then((s) => setOn(s !== null));
  }, []);
  const isIphoneInSafari = isIosDevice() && !isStandalone();
  const change = async (work: () => Promise<unknown>) => {
    setBusy(true);
    try {
      await work();
    } catch (error) {
      alertFailure(error);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div data-testid="notifications-tab">
      {isIphoneInSafari && <IphoneGuide />}
      {!canPush() && !isIphoneInSafari && (
        <p className="small text-body-secondary">
          This browser cannot receive push notifications; the bell lists them.
        </p>
      )}
      {canPush() && (
        <div className="d-flex align-items-center gap-2 mb-3">
          <span className="push-state">
            {isOn ? 'Notifications are on in this browser.' : 'Notifications are off in this browser.'}
          </span>
          <button
            type="button"
            className={`btn btn-sm ${isOn ? 'btn-outline-secondary' : 'btn-primary'} push-toggle`}
            disabled={isBusy || isOn === null}
            onClick={() =>
              void change(async () => {
                if (isOn) await disablePush();
                else await enablePush();
                setOn(!isOn);
              })
            }
          >
            {isOn ? 'Turn off' : 'Turn on'}
          </button>
        </div>
      )}
      <div className="fw-semibold mb-1">Tell me when</div>
      {NOTIFICATION_KINDS.map((kind) => (
        <Form.Check
          key={kind}
          type="switch"
          id={`notify-${kind}`}
          label={NOTIFICATION_KIND_LABELS[kind]}
          checked={choices.data?.[kind] ?? true}
          disabled={!choices.data || isBusy}
          onChange={(e) => {
            const enabled = e.currentTarget.checked;
            void change(async () => {
              await setChoice(kind, enabled);
              await queryClient.invalidateQueries({ queryKey: notificationKeys.choices });
            });
          }}
        />
      ))}
    </div>
  );
}
