import type { FastifyInstance } from 'fastify';
import { AppError, fail, failWith } from './errors.js';
import type { FaultTracker } from './faults.js';

/** The key `/readyz` asks the file store about: a metadata read, of a file Sideport never stores. */
export const READINESS_PROBE_KEY = 'readyz-probe';

export interface ReadinessDeps {
  /** Whether the database answers (one `select 1`). */
  ping: () => Promise<void>;
  /**
   * Whether the file store answers (one metadata read of a key nothing stores); throws
   * STORAGE_UNAVAILABLE when it is away. Its kind (`local`, `s3`) is in the answer.
   */
  storage: { kind: string; ping: () => Promise<void> };
  faults: Pick<FaultTracker, 'fault' | 'ok' | 'down'>;
  databaseKind: string;
}

export interface Readiness {
  /**
   * The process was asked to stop: `/readyz` answers 503 from now on while requests are still
   * served, so the load balancer stops sending new ones before the process closes.
   */
  beginDrain(): void;
  readonly isDraining: boolean;
  /** Adds `GET /readyz` (after the OpenAPI plugin, so the document lists it). */
  registerRoute(): void;
}

/**
 * `GET /readyz` (docs/architecture.md, Upgrades without downtime): 200 while this process can
 * serve (its database and its file store answer and it is not stopping), 503 with a sentence and
 * `Retry-After` otherwise (the first of those that fails). `/healthz` stays the liveness check. Once the server closes, a request that still
 * arrives on an open connection is answered 503 'This server is restarting.' with
 * `Connection: close`, so the client's next try goes to another process.
 */
export function registerReadiness(app: FastifyInstance, deps: ReadinessDeps): Readiness {
  let isDraining = false;
  let isClosing = false;
  app.addHook('preClose', async () => {
    isDraining = true;
    isClosing = true;
  });
  app.addHook('onRequest', async (_request, reply) => {
    if (!isClosing) return;
    reply.header('connection', 'close');
    throw fail('SHUTTING_DOWN');
  });

  const schema = {
    summary: 'Whether this process can serve (readiness)',
    description:
      '200 `{"status":"ready","database","storage","parts_down"}` while the database and the file store answer and the process is not stopping; ' +
      '503 with a sentence and Retry-After otherwise. GET /healthz is the liveness check.',
  };
  const route = () =>
    app.get('/readyz', { schema }, async () => {
      if (isDraining) throw fail('SHUTTING_DOWN');
      try {
        await deps.ping();
      } catch (err) {
        throw failWith('DATABASE_UNAVAILABLE', { cause: err });
      }
      deps.faults.ok('database');
      try {
        await deps.storage.ping();
      } catch (err) {
        // Counted and named on the checklist like a request's refusal; the sentence is the store's.
        deps.faults.fault('storage', err);
        throw err instanceof AppError ? err : failWith('STORAGE_UNAVAILABLE', { cause: err });
      }
      deps.faults.ok('storage');
      return {
        status: 'ready',
        database: deps.databaseKind,
        storage: deps.storage.kind,
        // What this process last found failing: it still serves, but requests needing these wait.
        parts_down: deps.faults.down().map((d) => d.part),
      };
    });

  return {
    registerRoute() {
      route();
    },
    beginDrain() {
      isDraining = true;
    },
    get isDraining() {
      return isDraining;
    },
  };
}
