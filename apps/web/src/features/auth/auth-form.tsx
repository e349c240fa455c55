import { useState, type FormEvent } from 'react';
import Button from 'react-bootstrap/Button';
import Card from 'react-bootstrap/Card';
import Form from 'react-bootstrap/Form';
import { useNavigate } from 'react-router';
import { md5 } from 'js-md5';
import { FormAlert } from '../../components/form-alert';
import { failureSentence } from '../../lib/api';
import { usePageTitle } from '../../lib/page-title';
import { afterSignInPath, useClientStore } from '../../lib/store';
import { signInOrUp } from './queries';
import { CONFIRM_RULE, ID_RULE, PASSWORD_RULE, validateAuthForm, type AuthMode } from './validate';

/** A sign-up rule under its field, or the rule's sentence when the last submit broke it. */
function Rule({ id, text, broken }: { id: string; text: string; broken: string | null }) {
  return (
    <div
      id={id}
      className={broken ? 'invalid-feedback d-block' : 'form-text'}
      role={broken ? 'alert' : undefined}
    >
      {broken ?? text}
    </div>
  );
}

/** The sign-in and sign-up forms (docs/product.md, Screens): Enter submits; the password travels as its MD5. */
export function AuthForm({ mode }: { mode: AuthMode }) {
  const navigate = useNavigate();
  const [id, setId] = useState('');
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const [busy, setBusy] = useState(false);
  // Sign-up says its rules under each field before anything is submitted, and a broken one there.
  const [problem, setProblem] = useState<string | null>(null);
  // What sign-in's rules or the server refused, read out by a screen reader (role=alert).
  const [refusal, setRefusal] = useState<string | null>(null);
  const isSignUp = mode === 'sign-up';
  usePageTitle(isSignUp ? 'Sign up' : 'Sign in');

  // Shows its own failures: the form fires it and forgets it (`void`).
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const broken = validateAuthForm(mode, id, password, confirm);
    setProblem(isSignUp ? broken : null);
    setRefusal(isSignUp ? null : broken);
    if (broken) return;
    setBusy(true);
    try {
      const { grade } = await signInOrUp(mode, { id, pw: md5(password) });
      const store = useClientStore.getState();
      store.signedIn(grade);
      void navigate(afterSignInPath(store.last_page), { replace: true });
    } catch (error) {
      setRefusal(failureSentence(error));
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
            <Form.Control
              autoComplete="username"
              value={id}
              onChange={(e) => setId(e.target.value)}
              isInvalid={problem === ID_RULE}
              aria-describedby={isSignUp ? 'sign-up-id-rule' : undefined}
            />
            {isSignUp && (
              <Rule
                id="sign-up-id-rule"
                text="At least 4 characters."
                broken={problem === ID_RULE ? problem : null}
              />
            )}
          </Form.Group>
          <Form.Group className="mb-3" controlId={`${mode}-password`}>
            <Form.Label>Password</Form.Label>
            <Form.Control
              type="password"
              autoComplete={isSignUp ? 'new-password' : 'current-password'}
              value={password}
              onChange={(e) => setPassword(e.target.value)}
              isInvalid={problem === PASSWORD_RULE}
              aria-describedby={isSignUp ? 'sign-up-password-rule' : undefined}
            />
            {isSignUp && (
              <Rule
                id="sign-up-password-rule"
                text="At least 8 characters."
                broken={problem === PASSWORD_RULE ? problem : null}
              />
            )}
          </Form.Group>
          {isSignUp && (
            <Form.Group className="mb-3" controlId="sign-up-confirm">
              <Form.Label>Password confirm</Form.Label>
              <Form.Control
                type="password"
                autoComplete="new-password"
                value={confirm}
                onChange={(e) => setConfirm(e.target.value)}
                isInvalid={problem === CONFIRM_RULE}
                aria-describedby="sign-up-confirm-rule"
              />
              <Rule
                id="sign-up-confirm-rule"
                text="The same password again."
                broken={problem === CONFIRM_RULE ? problem : null}
              />
            </Form.Group>
          )}
          <FormAlert message={refusal} />
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
