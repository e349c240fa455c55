import { useState, type FormEvent } from 'react';
import Button from 'react-bootstrap/Button';
import Form from 'react-bootstrap/Form';
import { useQueryClient } from '@tanstack/react-query';
import type { DeveloperAccount } from '@sideport/contracts';
import { adminKeys } from '../../entries/query-keys';
import { alertFailure } from '../../lib/api';
import { setMembershipRenewal } from './queries';

/**
 * The membership renewal date of an account, as Apple shows it on the membership page: slots of
 * removed devices come back when it passes (later renewals follow it yearly).
 */
export function RenewalForm({ account }: { account: DeveloperAccount }) {
  const queryClient = useQueryClient();
  const [date, setDate] = useState(account.membership_renews_at ?? '');
  const [busy, setBusy] = useState(false);

  const save = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    try {
      await setMembershipRenewal(account.id, date === '' ? null : date);
    } catch (error) {
      alertFailure(error);
    } finally {
      setBusy(false);
    }
    void queryClient.invalidateQueries({ queryKey: adminKeys.accounts });
  };

  return (
    <Form className="d-flex flex-wrap align-items-center gap-1" onSubmit={(e) => void save(e)}>
      <Form.Control
        type="date"
        size="sm"
        value={date}
        onChange={(e) => setDate(e.target.value)}
        aria-label={`Membership renewal of ${account.name}`}
        style={{ maxWidth: '10rem' }}
      />
      <Button
        type="submit"
        size="sm"
        variant="outline-secondary"
        disabled={busy || date === (account.membership_renews_at ?? '')}
      >
        Save
      </Button>
    </Form>
  );
}
