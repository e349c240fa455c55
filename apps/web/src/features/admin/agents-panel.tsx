import { useEffect } from 'react';
import Button from 'react-bootstrap/Button';
import Table from 'react-bootstrap/Table';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import type { AgentSummary } from '@sideport/contracts';
import { alertFailure, api } from '../../lib/api';
import { NewAgentForm } from './new-agent-form';
import { agentsQuery, formatTime } from './queries';

export const revokeQuestion = (name: string) => `Revoke agent '${name}'? Its token stops working at once.`;

/** The operator's worker agents: what each works on and how it went; create and revoke tokens. */
export function AgentsPanel() {
  const queryClient = useQueryClient();
  const agents = useQuery(agentsQuery);
  useEffect(() => {
    if (agents.error) alertFailure(agents.error);
  }, [agents.error]);

  const revoke = async (agent: AgentSummary) => {
    if (!window.confirm(revokeQuestion(agent.name))) return;
    try {
      await api(`/api/admin/agents/${agent.id}`, { method: 'DELETE' });
    } catch (error) {
      alertFailure(error);
    }
    void queryClient.invalidateQueries({ queryKey: ['admin'] });
  };

  return (
    <section aria-label="Agents">
      <NewAgentForm />
      {agents.data?.length === 0 ? (
        <p className="text-body-secondary">
          No agents yet. Create one and run sideport-agent with its token.
        </p>
      ) : (
        <Table responsive size="sm" className="align-middle" data-testid="agents-table">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Last seen</th>
              <th scope="col">Current job</th>
              <th scope="col">Done</th>
              <th scope="col">Failed</th>
              <th scope="col" className="position-relative">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {agents.data?.map((agent) => (
              <tr key={agent.id} data-testid="agent-row">
                <td className="fw-semibold">{agent.name}</td>
                <td className="text-nowrap">{formatTime(agent.last_seen_at)}</td>
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
          </tbody>
        </Table>
      )}
    </section>
  );
}
