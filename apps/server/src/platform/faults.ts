import { AppError } from './errors.js';

/**
 * The parts Sideport depends on, and what this process knows of their faults (docs/architecture.md,
 * When a part fails). A request that needs a part that is down is answered 503 with a sentence
 * and `Retry-After`; background work waits and tries again; `/metrics` counts each fault by part;
 * the setup checklist names the parts down; `/readyz` says whether this process can serve.
 */

/** Every outside part a fault can be told of, by the name `/metrics` and the checklist use. */
export const PARTS = ['database', 'storage', 'disk', 'app_store_connect', 'stripe', 'store', 'ocsp'] as const;
export type Part = (typeof PARTS)[number];

/** What the checklist calls each part. */
export const PART_LABELS: Record<Part, string> = {
  database: 'The database',
  storage: 'The file store',
  disk: 'The data disk',
  app_store_connect: 'App Store Connect',
  stripe: 'Stripe',
  store: 'The App Store catalogue',
  ocsp: "Apple's OCSP responder",
};

export interface PartDown {
  part: Part;
  since: Date;
  /** The last fault's message (for the operator; never sent to users). */
  reason: string;
}

export interface FaultTracker {
  /** The part failed (an answer refused, a connection lost): counted, and the part is down until `ok`. */
  fault(part: Part, err?: unknown): void;
  /** The part answered: it is up again. */
  ok(part: Part): void;
  /** The parts down now, oldest fault first. */
  down(): PartDown[];
  isDown(part: Part): boolean;
  /** Told of every fault (the metrics counter). */
  onFault(listener: (part: Part) => void): void;
}

/** A part with no fault for this long counts as up again, though nothing said it answered. */
export const FAULT_WINDOW_MS = 60_000;

export function createFaultTracker(clock: () => Date = () => new Date()): FaultTracker {
  const downSince = new Map<Part, PartDown & { lastAt: number }>();
  const listeners: Array<(part: Part) => void> = [];
  const current = () => {
    const now = clock().getTime();
    for (const [part, entry] of downSince) if (now - entry.lastAt > FAULT_WINDOW_MS) downSince.delete(part);
    return downSince;
  };
  return {
    fault(part, err) {
      const reason = err instanceof Error ? err.message : err === undefined ? 'failed' : String(err);
      const now = clock();
      const was = current().get(part);
      downSince.set(part, { part, since: was?.since ?? now, reason, lastAt: now.getTime() });
      for (const listener of listeners) listener(part);
    },
    ok(part) {
      downSince.delete(part);
    },
    down: () =>
      [...current().values()]
        .map(({ part, since, reason }) => ({ part, since, reason }))
        .sort((a, b) => a.since.getTime() - b.since.getTime()),
    isDown: (part) => current().has(part),
    onFault(listener) {
      listeners.push(listener);
    },
  };
}

const DATABASE_FAULT = Symbol('sideport.databaseFault');

/** Socket errors that mean the connection, not the query, failed. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
/**
 * PostgreSQL's own: class 08 (connection exception), 57P01-57P03 (the server shutting down,
 * crashed, or not yet accepting connections: a restart or a failover), 53300 (too many connections).
 */
const isConnectionState = (code: string) =>
  code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03' || code === '53300';
/** node-postgres's wording when the socket went away under it, or the pool could not connect in time. */
const CONNECTION_MESSAGES = [
  'Connection terminated',
  'Client has encountered a connection error',
  'timeout exceeded when trying to connect',
  'Client was closed and is not queryable',
];

/** Whether an error from node-postgres says the database could not be reached (not that a query was wrong). */
export function isConnectionFailure(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && (CONNECTION_CODES.has(code) || isConnectionState(code))) return true;
  return CONNECTION_MESSAGES.some((m) => err.message.startsWith(m));
}

/** Marks an error of the database driver as the database being unreachable (see `isDatabaseFault`). */
export function tagDatabaseFault(err: unknown): unknown {
  if (isConnectionFailure(err)) {
    Object.defineProperty(err, DATABASE_FAULT, { value: true });
  }
  return err;
}

/** Walks an error and its causes (drizzle wraps the driver's error) for one the database driver marked. */
export function isDatabaseFault(err: unknown): boolean {
  for (let e = err as { cause?: unknown } | undefined, depth = 0; e && depth < 8; depth++) {
    if (typeof e === 'object' && (e as Record<symbol, unknown>)[DATABASE_FAULT]) return true;
    e = e.cause as typeof e;
  }
  return false;
}

/**
 * How long the part that failed asks to be left alone, when the error says (`Retry-After` of a 429
 * or 503 from App Store Connect, Stripe or the store); otherwise undefined.
 */
export function retryAfterMsOf(err: unknown): number | undefined {
  for (
    let e = err as { cause?: unknown; retryAfterMs?: unknown } | undefined, depth = 0;
    e && depth < 8;
    depth++
  ) {
    if (typeof e === 'object' && typeof e.retryAfterMs === 'number') return e.retryAfterMs;
    e = e.cause as typeof e;
  }
  return undefined;
}

/**
 * A `Retry-After` header's value in milliseconds: delay-seconds or an HTTP date (RFC 9110 10.2.3);
 * undefined when absent or not understood.
 */
export function parseRetryAfter(value: string | null | undefined, now: Date): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now.getTime());
}

/** The part whose fault each refusal reports (counted in /metrics, named on the setup checklist). */
const PART_OF_CODE: Partial<Record<string, Part>> = {
  DATABASE_UNAVAILABLE: 'database',
  STORAGE_UNAVAILABLE: 'storage',
  DISK_FULL: 'disk',
  STORE_THROTTLED: 'store',
  STORE_TIMEOUT: 'store',
  STORE_UNREACHABLE: 'store',
  STORE_UNAVAILABLE: 'store',
  ASC_UNAVAILABLE: 'app_store_connect',
  PAYMENTS_UNAVAILABLE: 'stripe',
};

/** The part an error says is down (the database unreachable, a refusal of a part's own), if any. */
export function faultPartOf(err: unknown): Part | undefined {
  if (isDatabaseFault(err)) return 'database';
  return err instanceof AppError ? PART_OF_CODE[err.code] : undefined;
}

/** Whether work that failed with `err` should wait for a part to return rather than count a failed attempt. */
export const isDependencyFault = (err: unknown) => faultPartOf(err) !== undefined;
