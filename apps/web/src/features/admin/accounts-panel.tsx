import Badge from 'react-bootstrap/Badge';
import Button from 'react-bootstrap/Button';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import type { DeveloperAccount } from '@sideport/contracts';
import { adminKeys } from '../../entries/query-keys';
import { alertFailure } from '../../lib/api';
import { useFailureAlert } from '../../lib/use-failure-alert';
import { AccountSlots } from './account-slots';
import { AddAccountForm } from './add-account-form';
import { AdminTable } from './admin-table';
import { accountsQuery, identityQuery, setDeveloperAccountState } from './queries';
import { RenewalForm } from './renewal-form';

const ACCOUNT_COLUMNS = [
  { label: 'Account' },
  { label: 'State' },
  { label: 'Slots this membership year' },
  { label: 'Actions', isLabelHidden: true, isWideOnly: true },
];

const STATE_BADGE: Record<DeveloperAccount['state'], { bg: string; label: string }> = {
  enabled: { bg: 'success', label: 'In use' },
  disabled: { bg: 'secondary', label: 'Disabled' },
  rejected: { bg: 'danger', label: 'Key refused' },
};

export const disableQuestion = (account: DeveloperAccount) =>
  `Disable ${account.name}? The devices on it (${account.users} ${account.users === 1 ? 'person' : 'people'}) move to the other accounts, and their apps are signed again.`;

/**
 * The pool of Apple developer accounts: each one's slots per device family (Apple takes 100 of
 * each per membership year, and a removed device keeps its slot until the membership renews),
 * its renewal date, and whether devices go to it. Disabling one moves its people to the others.
 */
export function AccountsPanel() {
  const queryClient = useQueryClient();
  const identity = useQuery(identityQuery);
  const accounts = useQuery(accountsQuery);
  useFailureAlert(accounts.error);

  if (identity.data?.kind === 'dev') {
    return (
      <section aria-label="Developer accounts">
        <p data-testid="accounts-dev-identity">
          The dev identity signs on this server: one identity with no device limits, whose apps real devices
          will not install. Set ASC_KEY_ID, ASC_ISSUER_ID and ASC_PRIVATE_KEY to sign with Apple developer
          accounts; more can then be added here.
        </p>
      </section>
    );
  }

  const act = async (account: DeveloperAccount, action: 'disable' | 'enable') => {
    if (action === 'disable' && !window.confirm(disableQuestion(account))) return;
    try {
      await setDeveloperAccountState(account.id, action);
    } catch (error) {
      alertFailure(error);
    }
    void queryClient.invalidateQueries({ queryKey: adminKeys.all });
  };

  return (
    <section aria-label="Developer accounts">
      <AddAccountForm />
      <AdminTable
        testId="accounts-table"
        columns={ACCOUNT_COLUMNS}
        isEmpty={accounts.data?.length === 0}
        emptyText="No developer account yet."
      >
        {accounts.data?.map((account) => {
          const badge = STATE_BADGE[account.state];
          const action =
            account.state === 'enabled' ? (
              <Button
                size="sm"
                variant="outline-danger"
                aria-label={`Disable ${account.name}`}
                onClick={() => void act(account, 'disable')}
              >
                Disable
              </Button>
            ) : (
              <Button
                size="sm"
                variant="outline-primary"
                aria-label={`Enable ${account.name}`}
                onClick={() => void act(account, 'enable')}
              >
                Enable
              </Button>
            );
          return (
            <tr key={account.id} data-testid="account-row">
              <td>
                <div className="fw-semibold">
                  {account.name}{' '}
                  {account.primary && (
                    <Badge bg="primary" className="align-text-top">
                      First
                    </Badge>
                  )}
                </div>
                <div className="small text-body-secondary">
                  {account.name !== `Key ${account.key_id}` && <>Key {account.key_id} · </>}
                  {account.team_id && <>Team {account.team_id} · </>}
                  {account.source === 'config' ? 'from the configuration' : 'added here'}
                </div>
                <div className="small">
                  {account.users} {account.users === 1 ? 'person' : 'people'}, {account.devices}{' '}
                  {account.devices === 1 ? 'device' : 'devices'}
                </div>
                <div className="small mt-1">Membership renews</div>
                <RenewalForm key={`${account.id}:${account.membership_renews_at ?? ''}`} account={account} />
                {/* On a phone the action sits under the account, not at the far end of a scrolled table. */}
                <div className="d-md-none mt-1">{action}</div>
              </td>
              <td>
                <Badge bg={badge.bg}>{badge.label}</Badge>
                {account.reason && <div className="small text-body-secondary">{account.reason}</div>}
              </td>
              <td style={{ minWidth: '12rem' }}>
                <AccountSlots account={account} />
              </td>
              <td className="d-none d-md-table-cell text-end">{action}</td>
            </tr>
          );
        })}
      </AdminTable>
    </section>
  );
}
