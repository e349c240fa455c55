import Badge from 'react-bootstrap/Badge';
import ListGroup from 'react-bootstrap/ListGroup';
import { useQuery } from '@tanstack/react-query';
import type { SetupItem } from '@sideport/contracts';
import { useFailureAlert } from '../../lib/use-failure-alert';
import { setupChecklistQuery } from './queries';

const STATE_BADGE: Record<SetupItem['state'], { bg: string; text: string; label: string }> = {
  done: { bg: 'success', text: 'light', label: 'Done' },
  todo: { bg: 'warning', text: 'dark', label: 'To do' },
  optional: { bg: 'secondary', text: 'light', label: 'Optional' },
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
                <Badge bg={badge.bg} text={badge.text as 'light' | 'dark'}>
                  {badge.label}
                </Badge>
              </div>
              <div>{item.detail}</div>
              {item.action && <div className="small text-body-secondary text-break">{item.action}</div>}
            </ListGroup.Item>
          );
        })}
      </ListGroup>
    </section>
  );
}
