import { createJobQueue, type JobQueueDeps, type QueueSettings } from './queue.js';
import { createJobResults, type JobResultsDeps, type ResultSettings } from './results.js';

export type { AgentRef } from './queue.js';
export type { ImportAnswer } from './results.js';

export type JobSettings = QueueSettings & ResultSettings;
export type JobServiceDeps = JobQueueDeps & JobResultsDeps & { settings: JobSettings };

/**
 * The decrypt jobs as the agent API, the admin console and `sideport ipa:import` use them: the
 * lease queue (queue.ts: claims, heartbeats, failures, retries, expired leases) and what a result
 * becomes (results.ts: an uploaded or imported IPA checked, stored and its entry Done).
 */
export function createJobService(deps: JobServiceDeps) {
  const { lease, ...queue } = createJobQueue(deps);
  return { ...queue, ...createJobResults(deps, lease) };
}

export type JobService = ReturnType<typeof createJobService>;
