import { useState, type FormEvent } from 'react';
import Button from 'react-bootstrap/Button';
import Card from 'react-bootstrap/Card';
import Form from 'react-bootstrap/Form';
import { useNavigate } from 'react-router';
import { md5 } from 'js-md5';
import type { GradeAnswer } from '@sideport/contracts';
import { alertFailure, api } from '../../lib/api';
import { usePageTitle } from '../../lib/page-title';
import { afterSignInPath, useClientStore } from '../../lib/store';
import { validateAuthForm, type AuthMode } from './validate';

/** The sign-in and sign-up forms (docs/product.md, Screens): Enter submits; the password travels as its MD5. */
export function AuthForm({ mode }: { mode: AuthMode }) {
  const navigate = useNavigate();
  const [id, setId] = useState('');
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const [busy, setBusy] = useState(false);
  const isSignUp = mode === 'sign-up';
  usePageTitle(isSignUp ? 'Sign up' : 'Sign in');

  // Alerts its own failures: the form fires it and forgets it (`void`).
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const problem = validateAuthForm(mode, id, password, confirm);
    if (problem) return window.alert(problem);
    setBusy(true);
    try {
      const { grade } = await api<GradeAnswer>(`/api/${mode}`, {
        method: 'POST',
        body: { id, pw: md5(password) },
        isAuthAttempt: true,
      });
      const store = useClientStore.getState();
      store.signedIn(grade);
      void navigate(afterSignInPath(store.last_page), { replace: true });
    } catch (error) {
      alertFailure(error);
    } finally {
      setBusy(false);
    }
  };

  const other = isSignUp ? { label: 'Sign in', to: '/sign-in' } : { label: 'Sign up', to: '/sign-up' };
  return (
    <Card className="mx-auto" style={{ maxWidth: 420 }}>
      <Card.Body>
        <Card.Title as="h1" className="fs-4 mb-3">
          {isSignUp ? 'Sign up' : 'Sign in'}
        </Card.Title>
        <Form onSubmit={(event) => void submit(event)} noValidate>
          <Form.Group className="mb-3" controlId={`${mode}-id`}>
            <Form.Label>Id</Form.Label>
            <Form.Control autoComplete="username" value={id} onChange={(e) => setId(e.target.value)} />
          </Form.Group>
          <Form.Group className="mb-3" controlId={`${mode}-password`}>
            <Form.Label>Password</Form.Label>
            <Form.Control
              type="password"
              autoComplete={isSignUp ? 'new-password' : 'current-password'}
              value={password}
              onChange={(e) => setPassword(e.target.value)}
            />
          </Form.Group>
          {isSignUp && (
            <Form.Group className="mb-3" controlId="sign-up-confirm">
              <Form.Label>Password confirm</Form.Label>
              <Form.Control
                type="password"
                autoComplete="new-password"
                value={confirm}
                onChange={(e) => setConfirm(e.target.value)}
              />
            </Form.Group>
          )}
          <div className="d-flex gap-2">
            <Button type="submit" disabled={busy}>
              {isSignUp ? 'Sign up' : 'Sign in'}
            </Button>
            <Button variant="outline-secondary" type="button" onClick={() => void navigate(other.to)}>
              {other.label}
            </Button>
          </div>
        </Form>
      </Card.Body>
    </Card>
  );
}
