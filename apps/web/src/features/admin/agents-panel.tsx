import { When } from '../../lib/dates';
import Button from 'react-bootstrap/Button';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import type { AgentSummary } from '@sideport/contracts';
import { adminKeys } from '../../entries/query-keys';
import { alertFailure } from '../../lib/api';
import { useFailureAlert } from '../../lib/use-failure-alert';
import { AdminTable } from './admin-table';
import { NewAgentForm } from './new-agent-form';
import { agentsQuery, revokeAgent } from './queries';

export const revokeQuestion = (name: string) => `Revoke agent '${name}'? Its token stops working at once.`;

const AGENT_COLUMNS = [
  { label: 'Name' },
  { label: 'Last seen' },
  { label: 'Current job' },
  { label: 'Done' },
  { label: 'Failed' },
  { label: 'Actions', isLabelHidden: true },
];

/** The operator's worker agents: what each works on and how it went; create and revoke tokens. */
export function AgentsPanel() {
  const queryClient = useQueryClient();
  const agents = useQuery(agentsQuery);
  useFailureAlert(agents.error);

  const revoke = async (agent: AgentSummary) => {
    if (!window.confirm(revokeQuestion(agent.name))) return;
    try {
      await revokeAgent(agent.id);
    } catch (error) {
      alertFailure(error);
    }
    void queryClient.invalidateQueries({ queryKey: adminKeys.all });
  };

  return (
    <section aria-label="Agents">
      <NewAgentForm />
      <AdminTable
        testId="agents-table"
        columns={AGENT_COLUMNS}
        isEmpty={agents.data?.length === 0}
        emptyText="No agents yet. Create one and run sideport-agent with its token."
      >
        {agents.data?.map((agent) => (
          <tr key={agent.id} data-testid="agent-row">
            <td className="fw-semibold">{agent.name}</td>
            <td className="text-nowrap">
              <When iso={agent.last_seen_at} none="never" />
            </td>
            <td>{agent.current_job ?? '-'}</td>
            <td>{agent.done_count}</td>
            <td>{agent.failed_count}</td>
            <td className="text-end">
              <Button
                size="sm"
                variant="outline-danger"
                aria-label={`Revoke ${agent.name}`}
                onClick={() => void revoke(agent)}
              >
                Revoke
              </Button>
            </td>
          </tr>
        ))}
      </AdminTable>
    </section>
  );
}
