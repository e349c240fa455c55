import { SIGN_MODES } from '@sideport/contracts';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { PARTS, type FaultTracker } from '../../platform/faults.js';

/** The work queues: agents' decrypt and version-list jobs, and the sign workers' signs. */
export type JobQueue = 'decrypt' | 'versions' | 'sign';
export type JobEvent = 'claimed' | 'done' | 'failed' | 'lease_expired';
/** A decrypt job's lane: premium requests go first (docs/architecture.md, Data and state machines). */
export type DecryptLane = 'premium' | 'free';
export type RegistrationOutcome = 'registered' | 'retrying' | 'held' | 'awaiting_confirmation' | 'expired';

/** What the services count as they work. Each event is counted by the one process it happened in. */
export interface ServiceMetrics {
  job(queue: JobQueue, event: JobEvent, count?: number): void;
  /** A decrypt became Done: from its request to the accepted upload. */
  decryptDuration(lane: DecryptLane, seconds: number): void;
  /** A sign committed: from the worker's claim to the stored artifact. */
  signDuration(mode: number, seconds: number): void;
  registration(outcome: RegistrationOutcome, count?: number): void;
}

/** For services made where nothing is scraped (one-shot CLI commands, tests that do not look). */
export const noMetrics: ServiceMetrics = {
  job: () => {},
  decryptDuration: () => {},
  signDuration: () => {},
  registration: () => {},
};

/** The state every process reads from the database when scraped (the same in every process). */
export interface StateSnapshot {
  queue: Array<{ queue: JobQueue; status: QueueStatus; lane: QueueLane; jobs: number }>;
  agentsOnline: number;
  storageBytes: { decrypted: number; signed: number };
}
/** `expired`: leased, but the lease ran out and nobody has taken the job back yet. */
export type QueueStatus = 'queued' | 'leased' | 'expired';
/** Decrypt jobs go by lane; version lists and signs have one lane each (`all`). */
export type QueueLane = DecryptLane | 'all';

export interface MetricsDeps {
  /** Reads the queue depths, agents online and stored bytes (one round of queries). */
  readState: () => Promise<StateSnapshot>;
  clock: () => Date;
  /** How long one reading of the state answers scrapes: scrapes never cost a query each. */
  stateCacheMs: number;
  /** Told when the state could not be read (the scrape answers without it). */
  onStateError?: (err: unknown) => void;
  /** The faults of the parts this process depends on (counted, and whether each is down now). */
  faults?: Pick<FaultTracker, 'onFault' | 'isDown'>;
}

const QUEUES: ReadonlyArray<{ queue: JobQueue; lanes: readonly QueueLane[] }> = [
  { queue: 'decrypt', lanes: ['premium', 'free'] },
  { queue: 'versions', lanes: ['all'] },
  { queue: 'sign', lanes: ['all'] },
];
const STATUSES: readonly QueueStatus[] = ['queued', 'leased', 'expired'];
const JOB_EVENTS: readonly JobEvent[] = ['claimed', 'done', 'failed', 'lease_expired'];
const OUTCOMES: readonly RegistrationOutcome[] = [
  'registered',
  'retrying',
  'held',
  'awaiting_confirmation',
  'expired',
];

/**
 * Node's process metrics (CPU, memory, event loop, GC) belong to the process, not to one app: they
 * are collected once, on a registry of their own, whatever number of apps a process builds.
 */
let processRegistry: Registry | undefined;
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
    // Gauges named like counters, which promtool rejects; the per-type gauges beside them sum to the same.
    for (const name of [
      'nodejs_active_handles_total',
      'nodejs_active_requests_total',
      'nodejs_active_resources_total',
    ]) {
      processRegistry.removeSingleMetric(name);
    }
  }
  return processRegistry;
}

/**
 * Sideport's metrics in the Prometheus text format (prom-client). Counters and histograms are
 * this process's; the gauges of queue depth, agents online and stored bytes are read from the
 * database when scraped, at most once per `stateCacheMs`, so a scrape is never a query per series
 * and several scrapers at once cost one reading.
 */
export function createMetrics({ readState, clock, stateCacheMs, onStateError, faults }: MetricsDeps) {
  const registry = new Registry();
  const registers = [registry];

  const requestDuration = new Histogram({
    name: 'sideport_http_request_duration_seconds',
    help: 'HTTP requests answered by this process, by method, route pattern and status code.',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers,
  });
  const jobCounters = {
    claimed: new Counter({
      name: 'sideport_jobs_claimed_total',
      help: 'Jobs claimed in this process (an agent or a sign worker took one).',
      labelNames: ['queue'] as const,
      registers,
    }),
    done: new Counter({
      name: 'sideport_jobs_done_total',
      help: 'Jobs finished with a result in this process.',
      labelNames: ['queue'] as const,
      registers,
    }),
    failed: new Counter({
      name: 'sideport_jobs_failed_total',
      help: 'Job attempts that ended in a failure in this process (retried or given up).',
      labelNames: ['queue'] as const,
      registers,
    }),
    lease_expired: new Counter({
      name: 'sideport_jobs_lease_expired_total',
      help: 'Job leases found run out in this process (the worker stopped answering).',
      labelNames: ['queue'] as const,
      registers,
    }),
  } satisfies Record<JobEvent, Counter<'queue'>>;
  const decryptDuration = new Histogram({
    name: 'sideport_decrypt_duration_seconds',
    help: 'Time from a decrypt request to its accepted upload, by lane.',
    labelNames: ['lane'] as const,
    buckets: [5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400],
    registers,
  });
  const signDuration = new Histogram({
    name: 'sideport_sign_duration_seconds',
    help: `Time from a sign worker claiming a sign to its stored artifact, by sign mode (${SIGN_MODES.map((m) => `${m.type} ${m.apiName}`).join(', ')}).`,
    labelNames: ['mode'] as const,
    buckets: [0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600],
    registers,
  });
  const registrations = new Counter({
    name: 'sideport_device_registrations_total',
    help: 'Device registration outcomes in this process: registered, retrying (an outage), held (an admin must act), awaiting_confirmation (a Mac), expired.',
    labelNames: ['outcome'] as const,
    registers,
  });

  const dependencyFaults = new Counter({
    name: 'sideport_dependency_faults_total',
    help: `Faults of the parts this process depends on, by part (${PARTS.join(', ')}): a request refused 503 or a background pass put off.`,
    labelNames: ['part'] as const,
    registers,
  });
  faults?.onFault((part) => dependencyFaults.inc({ part }));
  new Gauge({
    name: 'sideport_dependency_up',
    help: 'Whether this process last found the part working (1) or failing (0), by part.',
    labelNames: ['part'] as const,
    registers,
    collect() {
      for (const part of PARTS) this.set({ part }, faults?.isDown(part) ? 0 : 1);
    },
  });

  // Every series exists from the start at 0, so rate() and alerts see the first event.
  for (const part of PARTS) dependencyFaults.inc({ part }, 0);
  for (const { queue } of QUEUES) for (const event of JOB_EVENTS) jobCounters[event].inc({ queue }, 0);
  for (const outcome of OUTCOMES) registrations.inc({ outcome }, 0);
  for (const lane of ['premium', 'free'] as const) decryptDuration.zero({ lane });
  for (const mode of SIGN_MODES) signDuration.zero({ mode: String(mode.type) });

  let cached: { at: number; value: Promise<StateSnapshot | undefined> } | undefined;
  function state(): Promise<StateSnapshot | undefined> {
    const now = clock().getTime();
    if (!cached || now - cached.at >= stateCacheMs || now < cached.at) {
      cached = {
        at: now,
        value: readState().catch((err: unknown) => {
          onStateError?.(err);
          cached = undefined;
          return undefined;
        }),
      };
    }
    return cached.value;
  }

  new Gauge({
    name: 'sideport_database_up',
    help: 'Whether the last reading of the state from the database succeeded (1) or not (0).',
    registers,
    async collect() {
      this.set((await state()) ? 1 : 0);
    },
  });
  new Gauge({
    name: 'sideport_queue_depth',
    help: 'Jobs waiting (queued) or worked on (leased, or expired: the lease ran out and the job is not taken back yet), by queue and lane.',
    labelNames: ['queue', 'status', 'lane'] as const,
    registers,
    async collect() {
      this.reset();
      const read = await state();
      if (!read) return;
      for (const { queue, lanes } of QUEUES)
        for (const lane of lanes) for (const status of STATUSES) this.set({ queue, status, lane }, 0);
      for (const row of read.queue)
        this.set({ queue: row.queue, status: row.status, lane: row.lane }, row.jobs);
    },
  });
  new Gauge({
    name: 'sideport_agents_online',
    help: 'Decrypt agents that called the server recently (within the decrypt lease, and at least a minute).',
    registers,
    async collect() {
      this.reset();
      const read = await state();
      if (read) this.set(read.agentsOnline);
    },
  });
  new Gauge({
    name: 'sideport_storage_bytes',
    help: 'Bytes of stored files the database names: decrypted IPAs and signed artifacts.',
    labelNames: ['kind'] as const,
    registers,
    async collect() {
      this.reset();
      const read = await state();
      if (!read) return;
      this.set({ kind: 'decrypted' }, read.storageBytes.decrypted);
      this.set({ kind: 'signed' }, read.storageBytes.signed);
    },
  });

  const service: ServiceMetrics = {
    job: (queue, event, count = 1) => jobCounters[event].inc({ queue }, count),
    decryptDuration: (lane, seconds) => decryptDuration.observe({ lane }, seconds),
    signDuration: (mode, seconds) => signDuration.observe({ mode: String(mode) }, seconds),
    registration: (outcome, count = 1) => registrations.inc({ outcome }, count),
  };

  return {
    service,
    /** `route` is the pattern the router matched (`/api/latest/:page`), never the address asked. */
    observeRequest(labels: { method: string; route: string; statusCode: number }, seconds: number) {
      requestDuration.observe(
        { method: labels.method, route: labels.route, status_code: String(labels.statusCode) },
        seconds,
      );
    },
    contentType: registry.contentType,
    /** The exposition text: this app's metrics, then the process's. */
    async render(): Promise<string> {
      const [own, proc] = await Promise.all([registry.metrics(), processMetrics().metrics()]);
      return `${own}\n${proc}`;
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
