import { useState, type FormEvent } from 'react';
import Button from 'react-bootstrap/Button';
import Form from 'react-bootstrap/Form';
import ListGroup from 'react-bootstrap/ListGroup';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import type { UpdatesOverview } from '@sideport/contracts';
import { adminKeys } from '../../entries/query-keys';
import { alertFailure } from '../../lib/api';
import { useFailureAlert } from '../../lib/use-failure-alert';
import { checkUpdatesNow, formatTime, setAutoUpdateCap, updatesOverviewQuery } from './queries';
import { capSentence, capSource, parseCap } from './update-cap';

/**
 * Updates of installed apps as the operator sees them (issue 33): how many wait (a newer store
 * version found, no update started), how many run, how many automatic ones started today against
 * the daily cap, and the cap itself, which the operator sets here (kept by the server, over
 * AUTO_UPDATE_DAILY_CAP).
 */
export function UpdatesPanel() {
  const overview = useQuery(updatesOverviewQuery);
  useFailureAlert(overview.error);
  if (!overview.data) return null;
  const o = overview.data;
  return (
    <section aria-label="Updates">
      <ListGroup className="mb-3" data-testid="updates-overview">
        <ListGroup.Item>
          <strong data-testid="updates-waiting">{o.waiting}</strong>{' '}
          {o.waiting === 1 ? 'update waits' : 'updates wait'}: installed apps with a newer store version, not
          started.
        </ListGroup.Item>
        <ListGroup.Item>
          <strong>{o.running}</strong> being decrypted or signed now.
        </ListGroup.Item>
        <ListGroup.Item data-testid="updates-automatic">{capSentence(o)}</ListGroup.Item>
        <ListGroup.Item className="small text-body-secondary">
          {o.tracked_apps} {o.tracked_apps === 1 ? 'app' : 'apps'} followed in the store; last looked at{' '}
          {formatTime(o.last_checked_at)}.
        </ListGroup.Item>
      </ListGroup>
      <CapForm overview={o} />
      <CheckNow />
    </section>
  );
}

/** The daily cap of automatic updates: a number saved, or the configured default back. */
function CapForm({ overview }: { overview: UpdatesOverview }) {
  const queryClient = useQueryClient();
  const [text, setText] = useState(String(overview.automatic_daily_cap));
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const change = async (cap: number | null) => {
    setBusy(true);
    try {
      const saved = await setAutoUpdateCap(cap);
      queryClient.setQueryData(adminKeys.updates, saved);
      setText(String(saved.automatic_daily_cap));
    } catch (failure) {
      alertFailure(failure);
    } finally {
      setBusy(false);
    }
  };
  const save = (event: FormEvent) => {
    event.preventDefault();
    const parsed = parseCap(text);
    setError('error' in parsed ? parsed.error : null);
    if ('cap' in parsed) void change(parsed.cap);
  };

  return (
    <Form className="mb-3" onSubmit={save} noValidate>
      <Form.Label htmlFor="auto-update-cap" className="fw-semibold">
        Automatic updates a day
      </Form.Label>
      <div className="d-flex flex-wrap align-items-start gap-2">
        <Form.Control
          id="auto-update-cap"
          inputMode="numeric"
          value={text}
          onChange={(e) => setText(e.target.value)}
          isInvalid={error !== null}
          aria-describedby="auto-update-cap-source"
          style={{ maxWidth: '8rem' }}
        />
        <Button
          type="submit"
          variant="outline-primary"
          disabled={busy || text.trim() === String(overview.automatic_daily_cap)}
        >
          Save
        </Button>
        {overview.automatic_daily_cap_is_set && (
          <Button variant="outline-secondary" disabled={busy} onClick={() => void change(null)}>
            Use the default ({overview.automatic_daily_cap_default})
          </Button>
        )}
      </div>
      {error && (
        <div className="invalid-feedback d-block" role="alert">
          {error}
        </div>
      )}
      <Form.Text id="auto-update-cap-source">{capSource(overview)}</Form.Text>
    </Form>
  );
}

/** The store check at once (apps checked within its interval are not asked again). */
function CheckNow() {
  const queryClient = useQueryClient();
  const [result, setResult] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const check = async () => {
    setBusy(true);
    try {
      const done = await checkUpdatesNow();
      setResult(
        `${done.asked} ${done.asked === 1 ? 'app' : 'apps'} checked in ${done.store_calls} store ${done.store_calls === 1 ? 'call' : 'calls'}: ${done.changed} changed, ${done.automatic} automatic ${done.automatic === 1 ? 'update' : 'updates'} started.`,
      );
    } catch (failure) {
      alertFailure(failure);
    } finally {
      setBusy(false);
    }
    void queryClient.invalidateQueries({ queryKey: adminKeys.updates });
  };
  return (
    <div className="d-flex flex-wrap align-items-center gap-2">
      <Button variant="outline-secondary" disabled={busy} onClick={() => void check()}>
        Check the store now
      </Button>
      {result && (
        <span className="small" role="status">
          {result}
        </span>
      )}
    </div>
  );
}
