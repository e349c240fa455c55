import { fail } from '../../platform/errors.js';

export interface StreamLimits {
  /** Streams one session (one browser) may hold open on this process. */
  perSession: number;
  /** Streams one user, over all their sessions, may hold open on this process. */
  perUser: number;
  /** Streams this process holds open at most: below its open-file limit (streamCapFor). */
  total: number;
}

/**
 * The global cap: EVENT_STREAMS_MAX when set, at most half the open-file limit, so every stream
 * open still leaves the other half for the database, stored files, /healthz, sign-in and pages.
 */
export function streamCapFor(openFileLimit: number, configured: number | undefined): number {
  const half = Number.isFinite(openFileLimit) ? Math.floor(openFileLimit / 2) : Number.MAX_SAFE_INTEGER;
  return Math.min(configured ?? half, half);
}

/**
 * Counts the event streams this process holds, by session, by user and in all. `open` takes a
 * place or refuses with a 429 sentence saying which cap was reached; the function it returns gives
 * the place back (once, however often it is called).
 */
export function createStreamCounter(limits: StreamLimits) {
  const bySession = new Map<string, number>();
  const byUser = new Map<string, number>();
  let total = 0;
  const add = (counts: Map<string, number>, key: string, delta: number) => {
    const n = (counts.get(key) ?? 0) + delta;
    if (n > 0) counts.set(key, n);
    else counts.delete(key);
  };
  return {
    open(session: string, userId: string): () => void {
      if ((bySession.get(session) ?? 0) >= limits.perSession) throw fail('EVENT_STREAMS_PER_SESSION');
      if ((byUser.get(userId) ?? 0) >= limits.perUser) throw fail('EVENT_STREAMS_PER_USER');
      if (total >= limits.total) throw fail('EVENT_STREAMS_FULL');
      add(bySession, session, 1);
      add(byUser, userId, 1);
      total += 1;
      let isOpen = true;
      return () => {
        if (!isOpen) return;
        isOpen = false;
        add(bySession, session, -1);
        add(byUser, userId, -1);
        total -= 1;
      };
    },
    /** Streams open now. */
    get size() {
      return total;
    },
  };
}

export type StreamCounter = ReturnType<typeof createStreamCounter>;
