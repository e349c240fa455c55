import { useState } from 'react';
import Form from 'react-bootstrap/Form';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { signModeOf, type AccountInfo, type AppUpdate } from '@sideport/contracts';
import { AppIcon } from '../../components/app-icon';
import { Flag } from '../../components/flag';
import { PhoneQr, phoneInstallUrl } from '../../components/phone-qr';
import { updateKeys } from '../../entries/query-keys';
import { alertFailure } from '../../lib/api';
import { isIosDevice } from '../../lib/device';
import { autoUpdatesQuery, installUpdate, setAutoUpdate, startUpdate, updatesQuery } from './queries';

/** What each state of an update says beside its button. */
const STATE_LINES: Record<AppUpdate['state'], string> = {
  Available: 'A newer version is in the store.',
  Decrypting: 'Decrypting the new version…',
  Signing: 'Signing it like the installed app…',
  Ready: 'Ready: install it on the phone.',
  Failed: 'The update stopped.',
};

function UpdateRow({
  update,
  isPremium,
  onInstallUrl,
}: {
  update: AppUpdate;
  isPremium: boolean;
  onInstallUrl: (url: string) => void;
}) {
  const queryClient = useQueryClient();
  const [isBusy, setBusy] = useState(false);
  const refetch = () => queryClient.invalidateQueries({ queryKey: updateKeys.all });
  const run = async (work: () => Promise<unknown>) => {
    setBusy(true);
    try {
      await work();
    } catch (error) {
      alertFailure(error);
    } finally {
      setBusy(false);
      await refetch();
    }
  };
  const canUpdate = update.state === 'Available' || update.state === 'Failed';
  const mode = signModeOf(update.sign_type);
  return (
    <li className="list-group-item d-flex gap-3 align-items-start update-row" data-app-id={update.app_id}>
      <AppIcon src={update.icon} name={update.name} size={48} />
      <div className="flex-grow-1 min-w-0">
        <div className="d-flex align-items-center gap-2 min-w-0">
          <Flag country={update.country} />
          <span className="fw-semibold text-truncate update-name">{update.name}</span>
        </div>
        <div className="small update-versions">
          {update.installed_version} → <strong>{update.store_version}</strong>
        </div>
        <div className="small text-body-secondary text-truncate">
          {mode.name} · {update.udids.length} {update.udids.length === 1 ? 'device' : 'devices'} ·{' '}
          {update.bundle_id}
        </div>
        <div className={`small update-state update-state-${update.state.toLowerCase()}`}>
          {STATE_LINES[update.state]}
        </div>
        {update.reason && <div className="small text-danger-emphasis update-reason">{update.reason}</div>}
        <Form.Check
          type="switch"
          id={`auto-${update.app_id}-${update.sign_type}`}
          className="small mt-1"
          label="Update automatically"
          checked={update.automatic}
          disabled={!isPremium || isBusy}
          title={isPremium ? undefined : 'Automatic updates come with a premium plan.'}
          onChange={(e) => void run(() => setAutoUpdate(update.app_id, e.currentTarget.checked))}
        />
      </div>
      <div className="text-end flex-shrink-0">
        {canUpdate && (
          <button
            type="button"
            className="btn btn-sm btn-primary update-button"
            disabled={isBusy}
            onClick={() => void run(() => startUpdate(update))}
          >
            Update
          </button>
        )}
        {update.state === 'Ready' && (
          <button
            type="button"
            className="btn btn-sm btn-success update-install"
            disabled={isBusy}
            onClick={() =>
              void run(async () => {
                const { url } = await installUpdate(update);
                onInstallUrl(url);
              })
            }
          >
            Install
          </button>
        )}
      </div>
    </li>
  );
}

/**
 * My page, Updates tab: the apps installed through Sideport whose store version is newer, each with
 * 'Update' (decrypt, then sign in the same mode for the same devices, then Install), and automatic
 * updates (premium), which do the same unasked and stop at Install, which only the phone can do.
 */
export function UpdatesTab({ info }: { info: AccountInfo | undefined }) {
  const updates = useQuery(updatesQuery);
  const auto = useQuery(autoUpdatesQuery);
  const queryClient = useQueryClient();
  const [phoneUrl, setPhoneUrl] = useState<string | null>(null);
  const isPremium = info?.premium === true;
  const onInstallUrl = (url: string) =>
    isIosDevice() ? window.location.assign(url) : setPhoneUrl(phoneInstallUrl(url));
  const setAll = async (enabled: boolean) => {
    try {
      await setAutoUpdate(null, enabled);
    } catch (error) {
      alertFailure(error);
    }
    await queryClient.invalidateQueries({ queryKey: updateKeys.all });
  };
  return (
    <div data-testid="updates-tab">
      <Form.Check
        type="switch"
        id="auto-all"
        className="mb-2"
        label={isPremium ? 'Update every app automatically' : 'Update every app automatically (premium)'}
        checked={auto.data?.all === true}
        disabled={!isPremium || !auto.data}
        onChange={(e) => void setAll(e.currentTarget.checked)}
      />
      {updates.isPending && <p className="text-body-secondary">Loading…</p>}
      {updates.error && <p className="text-danger-emphasis">{updates.error.message}</p>}
      {updates.data?.length === 0 && (
        <p className="text-body-secondary updates-none">Every app you installed is at the store's version.</p>
      )}
      {updates.data && updates.data.length > 0 && (
        <ul className="list-group updates-list">
          {updates.data.map((update) => (
            <UpdateRow
              key={`${update.app_id}-${update.sign_type}`}
              update={update}
              isPremium={isPremium}
              onInstallUrl={onInstallUrl}
            />
          ))}
        </ul>
      )}
      {phoneUrl && (
        <PhoneQr
          url={phoneUrl}
          label="Install the update"
          instruction="Open this with the iPhone's camera to install the new version."
        />
      )}
    </div>
  );
}
