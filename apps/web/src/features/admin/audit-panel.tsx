import { useEffect } from 'react';
import Table from 'react-bootstrap/Table';
import { useInfiniteQuery } from '@tanstack/react-query';
import { alertFailure } from '../../lib/api';
import { MoreButton } from './more-button';
import { auditQuery, formatTime } from './queries';

/** Admin deletes, blacklists, retries and agent changes: who, what, when (DESIGN.md section 7). */
export function AuditPanel() {
  const audit = useInfiniteQuery(auditQuery);
  useEffect(() => {
    if (audit.error) alertFailure(audit.error);
  }, [audit.error]);
  const entries = audit.data?.pages.flatMap((p) => p.entries) ?? [];

  if (audit.isSuccess && entries.length === 0) return <p className="text-body-secondary">No list now.</p>;
  return (
    <section aria-label="Audit log">
      <Table responsive size="sm" className="align-middle" data-testid="audit-table">
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Who</th>
            <th scope="col">Action</th>
            <th scope="col">Subject</th>
          </tr>
        </thead>
        <tbody>
          {entries.map((entry) => (
            <tr key={entry.id} data-testid="audit-row">
              <td className="text-nowrap small">{formatTime(entry.at)}</td>
              <td>{entry.actor}</td>
              <td className="text-nowrap">{entry.action}</td>
              <td className="small text-break">
                {Object.entries(entry.subject)
                  .map(
                    ([key, value]) => `${key}: ${typeof value === 'string' ? value : JSON.stringify(value)}`,
                  )
                  .join(', ')}
              </td>
            </tr>
          ))}
        </tbody>
      </Table>
      <MoreButton query={audit} />
    </section>
  );
}
