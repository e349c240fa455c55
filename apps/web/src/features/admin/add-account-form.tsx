import { useState, type FormEvent } from 'react';
import Button from 'react-bootstrap/Button';
import Form from 'react-bootstrap/Form';
import { useQueryClient } from '@tanstack/react-query';
import { adminKeys } from '../../entries/query-keys';
import { alertFailure } from '../../lib/api';
import { addDeveloperAccount } from './queries';

const EMPTY = { name: '', keyId: '', issuerId: '', privateKey: '', renewsAt: '' };

/**
 * Adds an App Store Connect key to the pool (Users and Access > Integrations, the Admin role). The
 * server checks it with Apple first, then keeps the key sealed; it is never shown again.
 */
export function AddAccountForm() {
  const queryClient = useQueryClient();
  const [fields, setFields] = useState(EMPTY);
  const [busy, setBusy] = useState(false);
  const set = (name: keyof typeof EMPTY) => (e: { target: { value: string } }) =>
    setFields((f) => ({ ...f, [name]: e.target.value }));

  const add = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    try {
      await addDeveloperAccount({
        ...(fields.name.trim() === '' ? {} : { name: fields.name.trim() }),
        key_id: fields.keyId.trim(),
        issuer_id: fields.issuerId.trim(),
        private_key: fields.privateKey,
        membership_renews_at: fields.renewsAt === '' ? null : fields.renewsAt,
      });
      setFields(EMPTY);
    } catch (error) {
      alertFailure(error);
    } finally {
      setBusy(false);
    }
    void queryClient.invalidateQueries({ queryKey: adminKeys.accounts });
  };

  const isComplete =
    fields.keyId.trim() !== '' && fields.issuerId.trim() !== '' && fields.privateKey.trim() !== '';
  return (
    <Form
      onSubmit={(e) => void add(e)}
      className="border rounded p-3 mb-3"
      aria-label="Add an App Store Connect key"
    >
      <h2 className="fs-6">Add an App Store Connect key</h2>
      <div className="row g-2">
        <Form.Group className="col-md-3" controlId="account-name">
          <Form.Label className="small mb-0">Name</Form.Label>
          <Form.Control
            size="sm"
            value={fields.name}
            maxLength={64}
            onChange={set('name')}
            placeholder="Team B"
          />
        </Form.Group>
        <Form.Group className="col-md-3" controlId="account-key-id">
          <Form.Label className="small mb-0">Key ID</Form.Label>
          <Form.Control size="sm" value={fields.keyId} maxLength={20} onChange={set('keyId')} required />
        </Form.Group>
        <Form.Group className="col-md-4" controlId="account-issuer-id">
          <Form.Label className="small mb-0">Issuer ID</Form.Label>
          <Form.Control
            size="sm"
            value={fields.issuerId}
            maxLength={36}
            onChange={set('issuerId')}
            required
          />
        </Form.Group>
        <Form.Group className="col-md-2" controlId="account-renews-at">
          <Form.Label className="small mb-0">Renews</Form.Label>
          <Form.Control size="sm" type="date" value={fields.renewsAt} onChange={set('renewsAt')} />
        </Form.Group>
        <Form.Group className="col-12" controlId="account-private-key">
          <Form.Label className="small mb-0">Private key (the AuthKey .p8 file's text)</Form.Label>
          <Form.Control
            as="textarea"
            rows={3}
            size="sm"
            className="font-monospace"
            value={fields.privateKey}
            onChange={set('privateKey')}
            placeholder="-----BEGIN PRIVATE KEY-----"
            autoComplete="off"
            spellCheck={false}
            required
          />
        </Form.Group>
      </div>
      <Button type="submit" size="sm" className="mt-2" disabled={busy || !isComplete}>
        Add key
      </Button>
    </Form>
  );
}
