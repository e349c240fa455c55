import { When } from '../../lib/dates';
import { useInfiniteQuery } from '@tanstack/react-query';
import { useFailureAlert } from '../../lib/use-failure-alert';
import { AdminTable } from './admin-table';
import { MoreButton } from './more-button';
import { auditQuery } from './queries';

const AUDIT_COLUMNS = [{ label: 'When' }, { label: 'Who' }, { label: 'Action' }, { label: 'Subject' }];

/** Admin deletes, blacklists, retries and agent changes: who, what, when (docs/architecture.md, Operator policy). */
export function AuditPanel() {
  const audit = useInfiniteQuery(auditQuery);
  useFailureAlert(audit.error);
  const entries = audit.data?.pages.flatMap((p) => p.entries) ?? [];

  return (
    <section aria-label="Audit log">
      <AdminTable
        testId="audit-table"
        columns={AUDIT_COLUMNS}
        isEmpty={audit.isSuccess && entries.length === 0}
      >
        {entries.map((entry) => (
          <tr key={entry.id} data-testid="audit-row">
            <td className="text-nowrap small">
              <When iso={entry.at} none="never" />
            </td>
            <td>{entry.actor}</td>
            <td className="text-nowrap">{entry.action}</td>
            <td className="small text-break">
              {Object.entries(entry.subject)
                .map(([key, value]) => `${key}: ${typeof value === 'string' ? value : JSON.stringify(value)}`)
                .join(', ')}
            </td>
          </tr>
        ))}
      </AdminTable>
      <MoreButton query={audit} />
    </section>
  );
}
