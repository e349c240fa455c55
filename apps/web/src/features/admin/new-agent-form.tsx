import { useRef, useState, type FormEvent } from 'react';
import Alert from 'react-bootstrap/Alert';
import Button from 'react-bootstrap/Button';
import Form from 'react-bootstrap/Form';
import { useQueryClient } from '@tanstack/react-query';
import type { CreatedAgent } from '@sideport/contracts';
import { adminKeys } from '../../entries/query-keys';
import { alertFailure } from '../../lib/api';
import { copyText } from '../../lib/copy-text';
import { createAgent } from './queries';

/**
 * Makes an agent. Its token is in the server's answer only (the database keeps a hash), so it is
 * shown here once, with a copy button, until dismissed.
 */
export function NewAgentForm() {
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [busy, setBusy] = useState(false);
  const [made, setMade] = useState<CreatedAgent | null>(null);
  const [copied, setCopied] = useState<string | null>(null);
  const tokenRef = useRef<HTMLElement>(null);

  // Alerts its own failures: the form fires it and forgets it (`void`).
  const create = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    try {
      const agent = await createAgent(name);
      setMade(agent);
      setCopied(null);
      setName('');
      void queryClient.invalidateQueries({ queryKey: adminKeys.all });
    } catch (error) {
      alertFailure(error);
    } finally {
      setBusy(false);
    }
  };

  const copy = async () => {
    if (!made || !tokenRef.current) return;
    setCopied((await copyText(tokenRef.current, made.token)) ? 'Copied.' : 'Select the token and copy it.');
  };

  return (
    <>
      <Form className="d-flex flex-wrap gap-2 mb-3" onSubmit={(event) => void create(event)}>
        <Form.Control
          aria-label="Agent name"
          placeholder="Agent name"
          value={name}
          maxLength={64}
          required
          onChange={(e) => setName(e.target.value)}
          style={{ maxWidth: '20rem' }}
        />
        <Button type="submit" disabled={busy || name.trim() === ''}>
          Create agent
        </Button>
      </Form>
      {made && (
        <Alert variant="success" dismissible onClose={() => setMade(null)} data-testid="new-agent-token">
          <div>
            Token of <strong>{made.name}</strong>. It is shown this once: put it in the agent's
            SIDEPORT_AGENT_TOKEN now.
          </div>
          <div className="d-flex flex-wrap align-items-center gap-2 mt-2">
            <code ref={tokenRef} className="text-break user-select-all agent-token">
              {made.token}
            </code>
            <Button size="sm" variant="outline-success" onClick={() => void copy()}>
              Copy
            </Button>
            {copied && (
              <span className="small" role="status">
                {copied}
              </span>
            )}
          </div>
        </Alert>
      )}
    </>
  );
}
