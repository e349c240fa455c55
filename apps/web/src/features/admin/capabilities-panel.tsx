import { useQuery } from '@tanstack/react-query';
import { useFailureAlert } from '../../lib/use-failure-alert';
import { AdminTable } from './admin-table';
import { CopyAppIdsForm } from './copy-app-ids-form';
import { capabilitiesQuery } from './queries';

const COLUMNS = [{ label: 'App' }, { label: 'Loses' }, { label: 'What the operator could do' }];

/**
 * What signing with this server's wildcard profiles loses of the newest Done versions (issue 30):
 * each capability, the parts of the app that lose it, and, for those Apple grants only to an
 * explicit App ID, the App Store Connect capability that would keep it and what its API cannot make.
 */
export function CapabilitiesPanel() {
  const list = useQuery(capabilitiesQuery);
  useFailureAlert(list.error);
  const entries = list.data ?? [];
  return (
    <section aria-label="Capabilities">
      <CopyAppIdsForm />
      <p className="small text-body-secondary">
        Apps signed here keep only what a wildcard App ID's profile grants. The newest decrypted versions that
        lose something:
      </p>
      <AdminTable
        testId="capabilities-table"
        columns={COLUMNS}
        isEmpty={list.isSuccess && entries.length === 0}
        emptyText="No decrypted version loses a capability."
      >
        {entries.map((entry) => (
          <tr key={`${entry.app_id}/${entry.app_ver_id}`} data-testid="capabilities-row">
            <td>
              {entry.name} {entry.version}
            </td>
            <td className="small">
              {entry.lost.map((l) => (
                <div key={l.id}>
                  {l.name} ({l.parts.join(', ')})
                </div>
              ))}
            </td>
            <td className="small text-break">
              {[...new Set(entry.lost.map((l) => l.operator).filter((o): o is string => o !== null))].map(
                (o) => (
                  <div key={o}>{o}</div>
                ),
              )}
            </td>
          </tr>
        ))}
      </AdminTable>
    </section>
  );
}
