import Badge from 'react-bootstrap/Badge';
import ListGroup from 'react-bootstrap/ListGroup';
import { useQuery } from '@tanstack/react-query';
import type { SetupItem } from '@sideport/contracts';
import { WithMoments } from '../../lib/dates';
import { useFailureAlert } from '../../lib/use-failure-alert';
import { setupChecklistQuery } from './queries';

// Emphasis text on a subtle background: each above 7:1 (WCAG AA needs 4.5:1 for small text).
const STATE_BADGE: Record<SetupItem['state'], { tone: string; label: string }> = {
  done: { tone: 'success', label: 'Done' },
  todo: { tone: 'warning', label: 'To do' },
  optional: { tone: 'secondary', label: 'Optional' },
};

/**
 * What the console opens on: each setup step, what is in place, and the one command or setting
 * that completes it. The server reads its own configuration; nothing here changes it.
 */
export function SetupPanel() {
  const checklist = useQuery(setupChecklistQuery);
  useFailureAlert(checklist.error);
  if (!checklist.data) return null;
  const left = checklist.data.filter((item) => item.state === 'todo').length;
  return (
    <section aria-label="Setup checklist">
      <p className="text-body-secondary">
        {left === 0
          ? 'Every step is done.'
          : `${left} of ${checklist.data.length} steps to do before real use.`}
      </p>
      <ListGroup data-testid="setup-checklist">
        {checklist.data.map((item) => {
          const badge = STATE_BADGE[item.state];
          return (
            <ListGroup.Item key={item.key} data-testid={`setup-${item.key}`}>
              <div className="d-flex flex-wrap align-items-center gap-2">
                <strong>{item.label}</strong>
                <Badge
                  bg={`${badge.tone}-subtle`}
                  text={`${badge.tone}-emphasis` as 'dark'}
                  className={`border border-${badge.tone}-subtle`}
                >
                  {badge.label}
                </Badge>
              </div>
              <div>
                <WithMoments text={item.detail} />
              </div>
              {item.action && <div className="small text-body-secondary text-break">{item.action}</div>}
            </ListGroup.Item>
          );
        })}
      </ListGroup>
    </section>
  );
}
