/**
 * What the chaos run does to the topology while the work goes on (CHAOS_SCENARIO):
 *
 *   kills         a random process SIGKILLed and started again, CHAOS_KILLS times
 *   dependencies  the parts Sideport does not run fail under it, one after the other: PostgreSQL
 *                 stopped with pg_ctl for CHAOS_PG_DOWN_S and started at the same address, the S3
 *                 store stopped for CHAOS_S3_DOWN_S and started on the same port and folder, the
 *                 data disk filled for CHAOS_DISK_FULL_S, then App Store Connect and Stripe
 *                 answering 429 with Retry-After and then 5xx for CHAOS_API_DOWN_S
 *   rolling       a rolling upgrade: each API process in turn, then each sign worker, asked to
 *                 stop (SIGTERM: it drains and exits) and started again, CHAOS_ROLLS times over
 *
 * Each returns what it did, and when the last part or process came back, from which the run
 * measures how long the queues took to move again.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Managed } from './processes.js';

export type Scenario = 'kills' | 'dependencies' | 'rolling';
export const SCENARIOS: readonly Scenario[] = ['kills', 'dependencies', 'rolling'];

/** A part the run can take away and give back. */
export interface Part {
  stop(): Promise<void>;
  start(): Promise<void>;
}

export interface DisruptionContext {
  apis: Managed[];
  workers: Managed[];
  /** Every process, agents included (they are made after the APIs start). */
  all: () => Managed[];
  database?: Part | undefined;
  storage?: Part | undefined;
  /** The size-limited folder the server processes' DATA_DIRs are in (chaos/small-disk.ts). */
  disk?: Part | undefined;
  /** App Store Connect and Stripe (chaos/outside-apis.ts). */
  outsideApis?: Part | undefined;
  /** When the work started, and how long the requests go on. */
  workStartedAt: number;
  spanMs: number;
  random: () => number;
  say: (line: string) => void;
  elapsed: () => string;
}

export interface Disrupted {
  /** When the first disruption began. */
  began?: number;
  /** What was done, one entry per kill, outage or replacement, for the summary. */
  events: Array<{ at: string; what: string }>;
  /**
   * Each part's return (or a process's restart), in order: the run measures the queues from each,
   * up to `until`, when the next disruption began.
   */
  returns: Array<{ what: string; at: number; until?: number }>;
}

const int = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 0)
    throw new Error(`${name} must be a whole number, not ${process.env[name]}`);
  return value;
};

export const KILLS = int('CHAOS_KILLS', 10);
export const PG_DOWN_MS = int('CHAOS_PG_DOWN_S', 30) * 1000;
export const S3_DOWN_MS = int('CHAOS_S3_DOWN_S', 60) * 1000;
export const DISK_FULL_MS = int('CHAOS_DISK_FULL_S', 30) * 1000;
export const API_DOWN_MS = int('CHAOS_API_DOWN_S', 40) * 1000;
export const ROLLS = int('CHAOS_ROLLS', 2);
/** Between one part's return and the next outage: time for the queues to move on their own. */
export const GAP_MS = int('CHAOS_GAP_S', 30) * 1000;
/** The dependencies scenario's first outage, this long into the work. */
const LEAD_MS = 15_000;
/** From the work's start to the dependencies scenario's last return: the requests span it. */
export const DEPENDENCIES_MS = LEAD_MS + PG_DOWN_MS + S3_DOWN_MS + DISK_FULL_MS + API_DOWN_MS + 3 * GAP_MS;
/** A killed process is started again after a pause drawn between these. */
const RESTART_MS = [500, 2000] as const;

export function disrupt(scenario: Scenario, ctx: DisruptionContext): Promise<Disrupted> {
  if (scenario === 'dependencies') return dependencies(ctx);
  if (scenario === 'rolling') return rolling(ctx);
  return kills(ctx);
}

/** Each kill at a random moment of the requests' span, one at a time (a process restarts first). */
async function kills(ctx: DisruptionContext): Promise<Disrupted> {
  const between = ([low, high]: readonly [number, number]) =>
    low + Math.floor(ctx.random() * (high - low + 1));
  const times = Array.from({ length: KILLS }, () => between([2000, ctx.spanMs])).sort((a, b) => a - b);
  const done: Disrupted = { events: [], returns: [] };
  for (let k = 0; k < KILLS; k++) {
    await sleep(Math.max(0, ctx.workStartedAt + times[k]! - Date.now()));
    const victim = ctx.all()[Math.floor(ctx.random() * ctx.all().length)]!;
    done.began ??= Date.now();
    await victim.kill();
    done.events.push({ at: ctx.elapsed().trim(), what: victim.name });
    ctx.say(`kill ${k + 1}/${KILLS}: ${victim.name} (SIGKILL)`);
    await sleep(between(RESTART_MS));
    await victim.start();
    done.returns.push({ what: victim.name, at: Date.now() });
    ctx.say(`           ${victim.name} restarted`);
  }
  return done;
}

/**
 * PostgreSQL away LEAD_MS into the requests, then the S3 store, the data disk, and App Store
 * Connect with Stripe, each CHAOS_GAP_S after the previous part is back (so each return is
 * measured alone): each while agents hold jobs, workers hold signs and users keep asking.
 */
async function dependencies(ctx: DisruptionContext): Promise<Disrupted> {
  const done: Disrupted = { events: [], returns: [] };
  const outages: Array<{ name: string; part: Part | undefined; downMs: number; at: number }> = [
    { name: 'PostgreSQL', part: ctx.database, downMs: PG_DOWN_MS, at: LEAD_MS },
    { name: 'the S3 store', part: ctx.storage, downMs: S3_DOWN_MS, at: LEAD_MS },
    { name: 'the data disk', part: ctx.disk, downMs: DISK_FULL_MS, at: LEAD_MS },
    { name: 'App Store Connect and Stripe', part: ctx.outsideApis, downMs: API_DOWN_MS, at: LEAD_MS },
  ];
  for (const outage of outages) {
    if (!outage.part) {
      ctx.say(`${outage.name}: not in this run's topology, left alone`);
      continue;
    }
    const previous = done.returns.at(-1);
    await sleep(
      Math.max(0, previous ? previous.at + GAP_MS - Date.now() : ctx.workStartedAt + outage.at - Date.now()),
    );
    if (previous) previous.until = Date.now();
    done.began ??= Date.now();
    await outage.part.stop();
    done.events.push({ at: ctx.elapsed().trim(), what: `${outage.name} away` });
    ctx.say(`${outage.name} away for ${outage.downMs / 1000} s`);
    await sleep(outage.downMs);
    await outage.part.start();
    done.returns.push({ what: outage.name, at: Date.now() });
    done.events.push({ at: ctx.elapsed().trim(), what: `${outage.name} back` });
    ctx.say(`${outage.name} back`);
  }
  return done;
}

/**
 * A rolling upgrade, as compose or a Deployment does it: one process at a time asked to stop with
 * SIGTERM (it leaves readiness, drains and exits) and started again once it exited, the next only
 * after it is ready. The rounds are spread over the requests' span.
 */
async function rolling(ctx: DisruptionContext): Promise<Disrupted> {
  const done: Disrupted = { events: [], returns: [] };
  const order = [...ctx.apis, ...ctx.workers];
  for (let round = 1; round <= ROLLS; round++) {
    await sleep(Math.max(0, ctx.workStartedAt + ((round - 1) * ctx.spanMs) / ROLLS + 2000 - Date.now()));
    for (const process of order) {
      const began = Date.now();
      const previous = done.returns.at(-1);
      if (previous) previous.until = Date.now();
      done.began ??= Date.now();
      await process.stop(60_000);
      await process.start();
      done.returns.push({ what: process.name, at: Date.now() });
      done.events.push({ at: ctx.elapsed().trim(), what: `${process.name} replaced` });
      ctx.say(
        `roll ${round}/${ROLLS}: ${process.name} stopped (SIGTERM) and started again in ${Date.now() - began} ms`,
      );
    }
  }
  return done;
}
