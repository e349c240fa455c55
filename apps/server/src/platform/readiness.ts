import type { FastifyInstance } from 'fastify';
import { fail, failWith } from './errors.js';
import type { FaultTracker } from './faults.js';

export interface ReadinessDeps {
  /** Whether the database answers (one `select 1`). */
  ping: () => Promise<void>;
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
 * serve (its database answers and it is not stopping), 503 with a sentence and `Retry-After`
 * otherwise. `/healthz` stays the liveness check. Once the server closes, a request that still
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
      '200 `{"status":"ready","database","parts_down"}` while the database answers and the process is not stopping; ' +
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
      return {
        status: 'ready',
        database: deps.databaseKind,
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
