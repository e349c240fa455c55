import { useState, type FormEvent } from 'react';
import Alert from 'react-bootstrap/Alert';
import Button from 'react-bootstrap/Button';
import Card from 'react-bootstrap/Card';
import Form from 'react-bootstrap/Form';
import { Link, useNavigate, useParams } from 'react-router';
import { useQuery } from '@tanstack/react-query';
import { md5 } from 'js-md5';
import { FormAlert } from '../../components/form-alert';
import { ApiError, failureSentence } from '../../lib/api';
import { usePageTitle } from '../../lib/page-title';
import { useClientStore } from '../../lib/store';
import { validateAuthForm } from '../auth/validate';
import { createFirstAdmin, setupLinkQuery } from './queries';

/**
 * /setup/:token: the one-time link the server prints at its first start. Whoever opens it creates
 * the admin account (the password rules of sign-up; the password travels as its MD5), is signed in
 * and lands on the admin console's setup checklist.
 */
export function SetupPage() {
  usePageTitle('Set up Sideport');
  const { token = '' } = useParams();
  const navigate = useNavigate();
  const [id, setId] = useState('');
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const [busy, setBusy] = useState(false);
  // A broken rule or the server's refusal, read out by a screen reader (role=alert).
  const [refusal, setRefusal] = useState<string | null>(null);
  const link = useQuery(setupLinkQuery(token));

  // Shows its own failures: the form fires it and forgets it (`void`).
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const problem = validateAuthForm('sign-up', id, password, confirm);
    setRefusal(problem);
    if (problem) return;
    setBusy(true);
    try {
      const { grade } = await createFirstAdmin(token, { id, pw: md5(password) });
      useClientStore.getState().signedIn(grade);
      void navigate('/admin', { replace: true });
    } catch (error) {
      setRefusal(failureSentence(error));
    } finally {
      setBusy(false);
    }
  };

  if (link.isPending) return null;
  if (link.isError) {
    const message =
      link.error instanceof ApiError && link.error.message ? link.error.message : 'Please retry later.';
    return (
      <Alert variant="warning" className="mx-auto" style={{ maxWidth: 520 }} data-testid="setup-closed">
        <p className="mb-2">{message}</p>
        <Link to="/sign-in">Sign in</Link>
      </Alert>
    );
  }
  return (
    <Card className="mx-auto" style={{ maxWidth: 420 }}>
      <Card.Body>
        <Card.Title as="h1" className="fs-4 mb-2">
          Create the admin account
        </Card.Title>
        <p className="text-body-secondary small">
          This link works once. The account gets the admin grade and opens the setup checklist.
        </p>
        <Form onSubmit={(event) => void submit(event)} noValidate>
          <Form.Group className="mb-3" controlId="setup-id">
            <Form.Label>Id</Form.Label>
            <Form.Control autoComplete="username" value={id} onChange={(e) => setId(e.target.value)} />
          </Form.Group>
          <Form.Group className="mb-3" controlId="setup-password">
            <Form.Label>Password</Form.Label>
            <Form.Control
              type="password"
              autoComplete="new-password"
              value={password}
              onChange={(e) => setPassword(e.target.value)}
            />
          </Form.Group>
          <Form.Group className="mb-3" controlId="setup-confirm">
            <Form.Label>Password confirm</Form.Label>
            <Form.Control
              type="password"
              autoComplete="new-password"
              value={confirm}
              onChange={(e) => setConfirm(e.target.value)}
            />
          </Form.Group>
          <FormAlert message={refusal} />
          <Button type="submit" disabled={busy}>
            Create admin account
          </Button>
        </Form>
      </Card.Body>
    </Card>
  );
}
