import { isApiError } from './api.js';
import { createBackoff, sleep } from './backoff.js';
import type { Lease } from './lease.js';
import type { Logger } from './log.js';

/**
 * Repeats `attempt` while the server is unreachable (capped exponential backoff with jitter), for
 * as long as the job is ours: undefined once the lease ended (lost or the agent stopping). Any
 * other error is the caller's to handle.
 */
export async function whileReachable<T>(
  lease: Lease,
  log: Logger,
  what: string,
  attempt: () => Promise<T>,
): Promise<T | undefined> {
  const backoff = createBackoff({ baseMs: 500, maxMs: 15_000 });
  for (;;) {
    if (lease.signal.aborted) return undefined;
    try {
      return await attempt();
    } catch (err) {
      if (lease.signal.aborted || isApiError(err, 'aborted')) return undefined;
      if (!isApiError(err, 'transient')) throw err;
      const waitMs = backoff.nextDelayMs();
      log.warn(`${what} failed (${err.message}); retrying in ${(waitMs / 1000).toFixed(1)} s`);
      await sleep(waitMs, lease.signal);
    }
  }
}

/**
 * After the lease's signal aborted: the server took the job back (nothing to report: it already
 * knows), or the agent is stopping (the job is handed back at once, a lost lease rather than a
 * failed attempt).
 * True when the job is over for this agent.
 */
export async function endedEarly(lease: Lease, log: Logger, tag: string): Promise<boolean> {
  if (lease.endedBy === 'lost') {
    log.warn(`${tag}: the server took the job back (${lease.lostReason}); its command was stopped`);
    return true;
  }
  if (lease.endedBy === 'stopped') {
    await lease.fail('The agent was stopped before it finished the job.', { stopped: true });
    return true;
  }
  return false;
}
