import { sql } from 'drizzle-orm';
import { queryRows, type Database } from '../../db/client.js';
import type { QueueLane, QueueStatus, StateSnapshot } from './registry.js';

/**
 * The scrape-time state, in four small aggregate queries over partial indexes' rows (active jobs
 * only) and two sums. Read-only, across domains on purpose: it reports on the tables, it changes
 * none.
 */
export async function readState(
  db: Database,
  options: { now: Date; onlineWindowMs: number },
): Promise<StateSnapshot> {
  const now = options.now.toISOString();
  const since = new Date(options.now.getTime() - options.onlineWindowMs).toISOString();
  const [jobRows, signRows, agentRows, storageRows] = await Promise.all([
    queryRows<{ kind: 'decrypt' | 'versions'; priority: number; status: QueueStatus; jobs: number }>(
      db,
      sql`select kind, priority,
                 case when state = 'leased' and lease_expires_at < ${now} then 'expired' else state end as status,
                 count(*)::int as jobs
            from jobs where state in ('queued', 'leased') group by 1, 2, 3`,
    ),
    queryRows<{ status: QueueStatus; jobs: number }>(
      db,
      sql`select case when state = 'leased' and lease_expires_at < ${now} then 'expired' else state end as status,
                 count(*)::int as jobs
            from sign_requests where state in ('queued', 'leased') group by 1`,
    ),
    queryRows<{ online: number }>(
      db,
      sql`select count(*)::int as online from agents where last_seen_at >= ${since}`,
    ),
    queryRows<{ decrypted: string | number; signed: string | number }>(
      db,
      sql`select (select coalesce(sum(size_bytes), 0) from versions where file_key is not null) as decrypted,
                 (select coalesce(sum(size_bytes), 0) from sign_requests where file_key is not null) as signed`,
    ),
  ]);
  // Premium decrypts have priority 1, free ones 0; version lists (priority 2) have a lane of their own.
  const laneOf = (row: { kind: string; priority: number }): QueueLane =>
    row.kind === 'versions' ? 'all' : row.priority > 0 ? 'premium' : 'free';
  const queue = new Map<string, StateSnapshot['queue'][number]>();
  for (const row of jobRows) {
    const entry = { queue: row.kind, status: row.status, lane: laneOf(row), jobs: 0 };
    const key = `${entry.queue}\0${entry.status}\0${entry.lane}`;
    (queue.get(key) ?? queue.set(key, entry).get(key)!).jobs += Number(row.jobs);
  }
  for (const row of signRows)
    queue.set(`sign\0${row.status}`, {
      queue: 'sign',
      status: row.status,
      lane: 'all',
      jobs: Number(row.jobs),
    });
  const storage = storageRows[0];
  return {
    queue: [...queue.values()],
    agentsOnline: Number(agentRows[0]?.online ?? 0),
    storageBytes: { decrypted: Number(storage?.decrypted ?? 0), signed: Number(storage?.signed ?? 0) },
  };
}
