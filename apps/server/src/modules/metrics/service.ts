import type { Database } from '../../db/client.js';
import { readState } from './queries.js';
import type { FaultTracker } from '../../platform/faults.js';
import { createMetrics } from './registry.js';

/** How long one reading of the queue depths, agents online and stored bytes answers scrapes. */
export const STATE_CACHE_MS = 5000;
/** An agent long-polls for up to 30 s and heartbeats every third of its lease: a minute covers both. */
const MIN_ONLINE_WINDOW_MS = 60_000;

/** The metrics of a server or worker process, their gauges read from this database. */
export function createSideportMetrics(deps: {
  db: Database;
  clock: () => Date;
  decryptLeaseSeconds: number;
  log: { warn(obj: object, msg: string): void };
  faults?: Pick<FaultTracker, 'onFault' | 'isDown'>;
}) {
  const { db, clock, log } = deps;
  const onlineWindowMs = Math.max(MIN_ONLINE_WINDOW_MS, deps.decryptLeaseSeconds * 1000);
  return createMetrics({
    readState: () => readState(db, { now: clock(), onlineWindowMs }),
    clock,
    stateCacheMs: STATE_CACHE_MS,
    onStateError: (err) => log.warn({ err }, 'metrics: could not read the queues from the database'),
    ...(deps.faults ? { faults: deps.faults } : {}),
  });
}
