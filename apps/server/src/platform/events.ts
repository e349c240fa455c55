import { sql } from 'drizzle-orm';
import type { LiveEvent } from '@sideport/contracts';
import type { Database, DatabaseHandle } from '../db/client.js';

/**
 * What one process tells the others. Live events go to browsers (`/api/events`): version changes
 * to everyone, sign and device changes only to `userId`. The rest wake waiting requests.
 */
export type BusEvent =
  | { kind: 'live'; event: LiveEvent; userId?: string }
  /** A job was queued: long-polling agents claim again. */
  | { kind: 'jobs-queued' }
  /** A versions job finished: downgrade requests waiting on that app answer. */
  | { kind: 'versions-listed'; country: string; appId: number }
  /** A sign job was queued (or put back): idle sign workers claim again. */
  | { kind: 'sign-queued' }
  /** A sign job ended (Done, or given up): a request waiting on it (Feather install) answers. */
  | { kind: 'sign-settled'; id: number }
  /** Push deliveries were queued: idle push senders claim them (modules/notifications). */
  | { kind: 'push-queued' }
  /** A session ended (sign-out): its event streams close. `session` is its key, the token's hash. */
  | { kind: 'session-ended'; session: string }
  /** Every session of a user ended (a new password): their event streams close. */
  | { kind: 'sessions-ended'; userId: string };

const CHANNEL = 'sideport_events';

export interface EventBus {
  /**
   * Sends to every process (this one included). Inside a transaction (`tx`) the event leaves at
   * commit and never for a rollback, so nobody hears of a change that did not happen.
   */
  publish(event: BusEvent, tx?: Database): Promise<void>;
  /** Several events in one round trip, in order. */
  publishMany(events: readonly BusEvent[], tx?: Database): Promise<void>;
  subscribe(handler: (event: BusEvent) => void): () => void;
  close(): Promise<void>;
}

/**
 * Sends `event` to every process listening on the database, without a bus of one's own: for a
 * service made before the bus (the accounts) or a process that only tells (the operator CLI).
 */
export async function publishEvent(db: Database, event: BusEvent): Promise<void> {
  await db.execute(sql`select pg_notify(${CHANNEL}, ${JSON.stringify(event)})`);
}

/** PostgreSQL LISTEN/NOTIFY (the same on PGlite): every API process hears every change. */
export async function createEventBus(database: Pick<DatabaseHandle, 'db' | 'listen'>): Promise<EventBus> {
  const handlers = new Set<(event: BusEvent) => void>();
  const stop = await database.listen(CHANNEL, (payload) => {
    let event: BusEvent;
    try {
      event = JSON.parse(payload) as BusEvent;
    } catch {
      return;
    }
    for (const handler of handlers) handler(event);
  });
  return {
    async publish(event, tx = database.db) {
      await publishEvent(tx, event);
    },
    async publishMany(events, tx = database.db) {
      if (events.length === 0) return;
      const payloads = sql.join(
        events.map((event) => sql`${JSON.stringify(event)}`),
        sql`, `,
      );
      await tx.execute(
        sql`select pg_notify(${CHANNEL}, payload) from unnest(array[${payloads}]::text[]) with ordinality as p(payload, n) order by n`,
      );
    },
    subscribe(handler) {
      handlers.add(handler);
      return () => handlers.delete(handler);
    },
    close: stop,
  };
}

/** Resolves with the first event `matches` accepts, or with undefined after `timeoutMs`. */
export function waitForEvent(
  bus: Pick<EventBus, 'subscribe'>,
  matches: (event: BusEvent) => boolean,
  timeoutMs: number,
) {
  return new Promise<BusEvent | undefined>((resolve) => {
    const timer = setTimeout(() => {
      unsubscribe();
      resolve(undefined);
    }, timeoutMs);
    const unsubscribe = bus.subscribe((event) => {
      if (!matches(event)) return;
      clearTimeout(timer);
      unsubscribe();
      resolve(event);
    });
  });
}
