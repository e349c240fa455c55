import { and, eq, lt, sql, type SQL } from 'drizzle-orm';
import type { PgColumn } from 'drizzle-orm/pg-core';

/**
 * Work handed out under leases (decrypt jobs to agents, sign requests to sign workers): the rules
 * every such table follows, and the SQL pieces they are written with. A row is `queued`, then
 * claimed (`FOR UPDATE SKIP LOCKED`, so two processes never claim the same row and nobody waits
 * on a lock) and `leased` to one holder until its lease runs out; the holder renews the lease
 * while it works. Each claim is a new attempt, and the lease names it: an old holder can never act
 * on its successor's work.
 *
 * An attempt that ends without a result is a failure (the work's own: counted toward
 * `maxFailures`) or a lost lease (the holder stopped answering, was stopped or revoked: nothing
 * was learnt of the work, so it counts apart, toward the larger `maxLostLeases`, and kills alone
 * cannot give good work up). Past either bound the row is given up with the reason; otherwise it
 * is queued again. The tables keep their own SQL where they differ (what is claimed first, what a
 * result commits); what an ended attempt does, and the sentences it records, are here only.
 */

export interface LeaseLimits {
  /** Failed attempts before the work is given up. */
  maxFailures: number;
  /** Lost leases before the work is given up. */
  maxLostLeases: number;
}

/** How an attempt ended without a result. */
export type AttemptEnd =
  /** `final`: given up at once, whatever the count (the work cannot succeed: an unsupported app). */
  { kind: 'failed'; reason: string; final?: boolean } | { kind: 'lost'; reason: string };

/** What an ended attempt makes of a row: its counts, whether it is given up, and the reason it records. */
export interface AttemptOutcome {
  failures: number;
  lostLeases: number;
  isFinal: boolean;
  reason: string;
}

/** The end of a lease that starts `now`. */
export const leaseUntil = (now: Date, leaseSeconds: number) => new Date(now.getTime() + leaseSeconds * 1000);

/** Whether a row that lost `lostLeases` leases already is given up when it loses one more. */
const isLastLostLease = (lostLeases: number, limits: Pick<LeaseLimits, 'maxLostLeases'>) =>
  lostLeases + 1 >= limits.maxLostLeases;

/** What an attempt that ended without a result makes of its row (see the top of this file). */
export function endOfAttempt(
  row: { failures: number; lostLeases: number },
  end: AttemptEnd,
  limits: LeaseLimits,
): AttemptOutcome {
  if (end.kind === 'failed') {
    const failures = row.failures + 1;
    const isFinal = end.final === true || failures >= limits.maxFailures;
    return { failures, lostLeases: row.lostLeases, isFinal, reason: end.reason };
  }
  const lostLeases = row.lostLeases + 1;
  const isFinal = isLastLostLease(row.lostLeases, limits);
  return {
    failures: row.failures,
    lostLeases,
    isFinal,
    reason: lostLeaseReason(end.reason, lostLeases, limits, isFinal),
  };
}

/**
 * A lost lease's reason says so and how many there were: 'The agent stopped answering before it
 * finished (lost lease 2 of 10).', then '...: given up after 10 lost leases.'. Made of literal
 * text and the counts, so that TypeScript and SQL (a claim that finds a lease run out) say the same.
 */
function lostLeaseSentence<T>(
  reason: string,
  lostLeases: T,
  maxLostLeases: T,
  isFinal: boolean,
): Array<string | T> {
  const cause = reason.replace(/\.$/, '');
  return isFinal
    ? [cause, ': given up after ', lostLeases, ' lost leases.']
    : [cause, ' (lost lease ', lostLeases, ' of ', maxLostLeases, ').'];
}

function lostLeaseReason(
  reason: string,
  lostLeases: number,
  limits: Pick<LeaseLimits, 'maxLostLeases'>,
  isFinal: boolean,
) {
  return lostLeaseSentence(reason, String(lostLeases), String(limits.maxLostLeases), isFinal).join('');
}

/** The columns every leased table has; `holder` names who holds the lease (an agent's id, a worker). */
export interface LeasedColumns {
  id: PgColumn;
  state: PgColumn;
  holder: PgColumn;
  attempts: PgColumn;
  failures: PgColumn;
  lostLeases: PgColumn;
  leaseExpiresAt: PgColumn;
  lastReason: PgColumn;
}

/** A lease as its holder names it: the row, the holder and the attempt it took. */
export interface HeldLease<THolder> {
  id: number;
  holder: THolder;
  attempt: number;
}

/**
 * The SQL of one leased table: conditions and `set` values its queries are written with.
 * `holderKey` is the holder column's property name, `givenUp` the state a row given up is left in.
 */
export function leasedTable<TState extends string, THolderKey extends string, THolder>(spec: {
  columns: LeasedColumns;
  holderKey: THolderKey;
  states: { queued: TState; leased: TState; givenUp: TState };
}) {
  const { columns: c, holderKey, states } = spec;
  const noHolder = { [holderKey]: null } as { [K in THolderKey]: null };

  return {
    /** The row of this lease, while its holder still holds it (not taken again, not ended). */
    held: (lease: HeldLease<THolder>): SQL =>
      and(
        eq(c.id, lease.id),
        eq(c.holder, lease.holder),
        eq(c.attempts, lease.attempt),
        eq(c.state, states.leased),
      )!,

    /** Leased rows whose lease ran out by `now`. */
    expired: (now: Date): SQL => and(eq(c.state, states.leased), lt(c.leaseExpiresAt, now))!,

    /** Of the expired rows, those whose lost lease is their last (`limits.maxLostLeases`). */
    isLastLostLease: (limits: Pick<LeaseLimits, 'maxLostLeases'>): SQL =>
      sql`${c.lostLeases} + 1 >= ${limits.maxLostLeases}`,

    /** A claim: leased to `holder` under a new attempt until `now` + `leaseSeconds`. */
    claimed: (holder: THolder, now: Date, leaseSeconds: number) =>
      ({
        state: states.leased,
        [holderKey]: holder,
        attempts: sql`${c.attempts} + 1`,
        leaseExpiresAt: leaseUntil(now, leaseSeconds),
        updatedAt: now,
      }) as { state: TState; attempts: SQL; leaseExpiresAt: Date; updatedAt: Date } & {
        [K in THolderKey]: THolder;
      },

    /**
     * A claim of a row whose lease ran out (`wasLost`, read from the row as it was): the lost lease
     * is counted and said, as `endOfAttempt` would, in the statement that claims it again.
     */
    lostOnClaim: (wasLost: SQL, reason: string, limits: Pick<LeaseLimits, 'maxLostLeases'>) => {
      const sentence = lostLeaseSentence<SQL>(
        reason,
        sql`(${c.lostLeases} + 1)`,
        sql`${limits.maxLostLeases}::int`,
        false,
      ).map((part) => (typeof part === 'string' ? sql`${part}` : part));
      return {
        lostLeases: sql`case when ${wasLost} then ${c.lostLeases} + 1 else ${c.lostLeases} end`,
        lastReason: sql`case when ${wasLost} then ${sql.join(sentence, sql` || `)} else ${c.lastReason} end`,
      };
    },

    /** Renewed: the lease runs `leaseSeconds` from `now`. */
    renewed: (now: Date, leaseSeconds: number) => ({ leaseExpiresAt: leaseUntil(now, leaseSeconds) }),

    /** Handed back before it started (a holder that stops, an agent gone before it heard): queued, the attempt not counted. */
    released: (now: Date) => ({
      state: states.queued,
      ...noHolder,
      leaseExpiresAt: null,
      attempts: sql`${c.attempts} - 1`,
      updatedAt: now,
    }),

    /** An ended attempt (`endOfAttempt`): queued again, or given up, with its counts and reason. */
    ended: (outcome: AttemptOutcome, now: Date) => ({
      state: outcome.isFinal ? states.givenUp : states.queued,
      ...noHolder,
      leaseExpiresAt: null,
      failures: outcome.failures,
      lostLeases: outcome.lostLeases,
      lastReason: outcome.reason,
      updatedAt: now,
    }),
  };
}

/**
 * Claims arriving together share one statement (group commit): while a claim is at the database,
 * the next ones gather and go in the following statement, so at low load a claim waits for nobody
 * and at high load the database does one statement for many holders. Claims of different `kinds`
 * go in different statements. `run` answers each holder's row by its 0-based place (`slot`);
 * `afterEach` runs before the claims are answered (it must not throw).
 */
export function createClaimBatcher<THolder, TKind extends string, TRow extends { slot: number }>(
  run: (holders: THolder[], kinds: readonly TKind[]) => Promise<TRow[]>,
  afterEach: (claimed: TRow[]) => Promise<void>,
  maxBatch = 64,
) {
  interface Waiter {
    holder: THolder;
    resolve(row: TRow | undefined): void;
    reject(err: unknown): void;
  }
  const waiting = new Map<string, { kinds: readonly TKind[]; waiters: Waiter[] }>();
  let isRunning = false;
  async function drain() {
    isRunning = true;
    try {
      while (waiting.size > 0) {
        const [key, group] = waiting.entries().next().value!;
        const batch = group.waiters.splice(0, maxBatch);
        if (group.waiters.length === 0) waiting.delete(key);
        try {
          const claimed = await run(
            batch.map((w) => w.holder),
            group.kinds,
          );
          const bySlot = new Map(claimed.map((row) => [row.slot, row]));
          await afterEach(claimed);
          batch.forEach((waiter, slot) => waiter.resolve(bySlot.get(slot)));
        } catch (err) {
          for (const waiter of batch) waiter.reject(err);
        }
      }
    } finally {
      isRunning = false;
    }
  }
  return {
    claim(holder: THolder, kinds: readonly TKind[]) {
      return new Promise<TRow | undefined>((resolve, reject) => {
        const key = [...kinds].sort().join(',');
        const group = waiting.get(key) ?? { kinds, waiters: [] };
        group.waiters.push({ holder, resolve, reject });
        waiting.set(key, group);
        if (!isRunning) void drain();
      });
    },
  };
}
