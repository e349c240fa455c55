import { useQuery } from '@tanstack/react-query';
import { queueStatus } from '@sideport/contracts';
import { api } from '../../lib/api';

/** How often the queue asks whether an agent works it: agents come and go without an event. */
const STATUS_EVERY_MS = 30_000;

const queueStatusQuery = {
  queryKey: ['queue-status'],
  queryFn: async () => queueStatus.parse(await api<unknown>('/api/queue-status')),
  refetchInterval: STATUS_EVERY_MS,
  retry: false,
};

/** When requests wait and no agent has called for minutes, the queue says so rather than look stuck. */
export function QueueNotice() {
  const { data } = useQuery(queueStatusQuery);
  if (!data?.waiting_for_agent) return null;
  return (
    <div className="alert alert-warning" role="status" data-testid="waiting-for-agent">
      {data.waiting === 1 ? '1 request is' : `${data.waiting} requests are`} waiting for a decrypt agent: none
      has been seen {data.agent_seen_at ? `since ${new Date(data.agent_seen_at).toLocaleString()}` : 'yet'}.
      They will be worked as soon as one is back.
    </div>
  );
}
