import { useQuery } from '@tanstack/react-query';
import { When } from '../../lib/dates';
import { queueStatusQuery } from './queries';

/** When requests wait and no agent has called for minutes, the queue says so rather than look stuck. */
export function QueueNotice() {
  const { data } = useQuery(queueStatusQuery);
  if (!data?.waiting_for_agent) return null;
  return (
    <div className="alert alert-warning" role="status" data-testid="waiting-for-agent">
      {data.waiting === 1 ? '1 request is' : `${data.waiting} requests are`} waiting for a decrypt agent: none
      has been seen{' '}
      {data.agent_seen_at ? (
        <>
          since <When iso={data.agent_seen_at} />
        </>
      ) : (
        'yet'
      )}
      . They will be worked as soon as one is back.
    </div>
  );
}
