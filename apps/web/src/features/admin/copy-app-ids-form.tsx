import { useState } from 'react';
import Form from 'react-bootstrap/Form';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { adminKeys } from '../../entries/query-keys';
import { alertFailure } from '../../lib/api';
import { useFailureAlert } from '../../lib/use-failure-alert';
import { copyAppIdsQuery, setCopyAppIds } from './queries';

/**
 * The operator's setting that keeps a DUP copy's capabilities (issue 30): App Store Connect makes
 * the copy an explicit App ID with what the app claims enabled, where its API can; the line under
 * it names what the API cannot create, which copies still lose.
 */
export function CopyAppIdsForm() {
  const queryClient = useQueryClient();
  const setting = useQuery(copyAppIdsQuery);
  useFailureAlert(setting.error);
  const [busy, setBusy] = useState(false);
  const data = setting.data;

  const choose = async (enabled: boolean) => {
    setBusy(true);
    try {
      queryClient.setQueryData(adminKeys.copyAppIds, await setCopyAppIds(enabled));
    } catch (error) {
      alertFailure(error);
    } finally {
      setBusy(false);
    }
    // The version entries' reports follow the setting.
    void queryClient.invalidateQueries({ queryKey: adminKeys.capabilities });
  };

  if (!data) return null;
  return (
    <div className="mb-3" data-testid="copy-app-ids">
      <Form.Check
        type="switch"
        role="switch"
        id="copy-app-ids"
        label="Give each DUP copy an explicit App ID with its capabilities (App Store Connect)"
        checked={data.enabled}
        disabled={busy || !data.available}
        onChange={(e) => void choose(e.target.checked)}
      />
      <div className="small text-body-secondary">
        {data.available
          ? 'A copy of an app with no extensions is signed for an App ID made for it, with push, associated domains, Sign in with Apple and the other capabilities the API can enable. '
          : 'Needs App Store Connect keys: the dev identity makes no App IDs. '}
        The API cannot create {data.cannot_create.join('; ')}: copies still lose those.
      </div>
    </div>
  );
}
