import type { AgentJob, HeartbeatRequest } from '@sideport/contracts';
import { isApiError, type AgentApi } from './api.js';
import { createBackoff, sleep } from './backoff.js';
import type { Logger } from './log.js';

export interface LeaseDeps {
  api: Pick<AgentApi, 'heartbeat' | 'fail'>;
  log: Logger;
  /** The agent is stopping (SIGINT/SIGTERM). */
  stop: AbortSignal;
}

/**
 * Line-triggered heartbeats are sent at most this often: a command printing progress fast is
 * summed up (the latest progress wins), but every status it passes through is sent, in order.
 */
const MIN_GAP_MS = 250;
const MAX_REASON_CHARS = 500;

/**
 * The agent's hold on one job: heartbeats on a timer well within the lease (a third of it), the
 * command's reports sent as they come (merged while one is in flight), and `signal`, which aborts
 * when the server says the job is no longer ours (409) or the token is refused (401), or the
 * agent is stopping. Transient failures are retried by the next beat: the lease outlives a short
 * server restart.
 */
export function holdLease(job: AgentJob, { api, log, stop }: LeaseDeps) {
  const lost = new AbortController();
  const signal = AbortSignal.any([lost.signal, stop]);
  const intervalMs = Math.max(200, Math.floor((job.lease_seconds * 1000) / 3));
  let pending: HeartbeatRequest[] = [];
  let inFlight: Promise<void> | undefined;
  let lastSentAt = 0;
  let gapTimer: NodeJS.Timeout | undefined;
  let released = false;
  let failing = false;
  /** The server has the job's result (a beat that crossed the upload's answer): beats end, nothing is lost. */
  let finished = false;

  const send = (report: HeartbeatRequest) =>
    api.heartbeat(job.id, report).then(
      () => {
        if (failing) log.info(`job ${job.id}: heartbeats reach the server again`);
        failing = false;
      },
      (err: unknown) => {
        if (isApiError(err, 'finished')) {
          finished = true;
          return;
        }
        if (isApiError(err, 'lease-lost') || isApiError(err, 'unauthorized')) {
          if (!released) lost.abort(err);
          return;
        }
        // Not delivered: what it carried goes out with the next beat.
        pending = merge([report], pending);
        if (!failing) log.warn(`job ${job.id}: heartbeat failed (${(err as Error).message}); retrying`);
        failing = true;
      },
    );

  const flush = () => {
    if (released || finished || inFlight) return;
    const wait = lastSentAt + MIN_GAP_MS - Date.now();
    if (wait > 0) {
      gapTimer ??= setTimeout(() => {
        gapTimer = undefined;
        flush();
      }, wait);
      return;
    }
    const report = pending.shift() ?? {};
    lastSentAt = Date.now();
    inFlight = send(report).finally(() => {
      inFlight = undefined;
      if (pending.length) flush();
    });
  };
  const timer = setInterval(flush, intervalMs);

  return {
    signal,
    /** Why `signal` aborted: the server took the job back, or the agent is stopping. */
    get endedBy(): 'lost' | 'stopped' | undefined {
      return lost.signal.aborted ? 'lost' : stop.aborted ? 'stopped' : undefined;
    },
    /** The reason the server gave when it took the job back. */
    get lostReason(): string | undefined {
      return lost.signal.aborted ? String((lost.signal.reason as Error).message) : undefined;
    },
    /** A report from the command's stdout, sent with the next heartbeat (soon). */
    report(report: HeartbeatRequest) {
      if (released) return;
      pending = merge(pending, [report]);
      flush();
    },
    /**
     * Sends what the command reported and is not sent yet (a command that prints its last
     * statuses just before exiting), before the agent moves on. Best effort: a server that cannot
     * be reached now hears of them with a later beat.
     */
    async drain() {
      while (!released && !finished && !failing && (pending.length > 0 || inFlight)) {
        if (inFlight) await inFlight;
        else {
          await sleep(Math.max(0, lastSentAt + MIN_GAP_MS - Date.now()));
          flush();
        }
      }
    },
    /** Stops the heartbeats (the job is finished, one way or the other). */
    async release() {
      released = true;
      clearInterval(timer);
      clearTimeout(gapTimer);
      await inFlight;
    },
    /**
     * Reports the attempt failed so the job goes back to the queue at once (or becomes Not when
     * `unsupported`), retrying while the server is unreachable, up to the lease's end (after
     * which the server takes the job back by itself). `stopped`: the agent is stopping and hands
     * the job back, which the server counts as a lost lease rather than a failed attempt.
     */
    async fail(reason: string, how: { unsupported?: boolean; stopped?: boolean } = {}) {
      if (lost.signal.aborted) return;
      const text = reason.length > MAX_REASON_CHARS ? `${reason.slice(0, MAX_REASON_CHARS - 1)}…` : reason;
      const deadline = Date.now() + job.lease_seconds * 1000;
      const backoff = createBackoff({ baseMs: 250, maxMs: 5000 });
      for (;;) {
        try {
          const answer = await api.fail(job.id, {
            reason: text,
            ...(how.unsupported ? { unsupported: true } : {}),
            ...(how.stopped ? { stopped: true } : {}),
          });
          log.info(
            `job ${job.id}: reported failed (${answer.status === 'Not' ? 'the entry is now Not' : 'back in the queue'}): ${text}`,
          );
          return;
        } catch (err) {
          if (isApiError(err, 'transient') && Date.now() < deadline) {
            await sleep(backoff.nextDelayMs());
            continue;
          }
          if (isApiError(err, 'lease-lost'))
            log.info(`job ${job.id}: the server had already taken the job back`);
          else if (isApiError(err, 'finished'))
            log.info(`job ${job.id}: the server has the job's result already; nothing to report`);
          else
            log.warn(
              `job ${job.id}: could not report the failure (${(err as Error).message}); the lease will run out instead`,
            );
          return;
        }
      }
    },
  };
}

export type Lease = ReturnType<typeof holdLease>;

/**
 * Reports still to send, in order: a later report joins the last one unless both carry a status,
 * so no status is lost while progress, app_ver_id and version keep only their latest value.
 */
export function merge(earlier: HeartbeatRequest[], later: HeartbeatRequest[]): HeartbeatRequest[] {
  const result = earlier.map((r) => ({ ...r }));
  for (const report of later) {
    const last = result.at(-1);
    if (last && !(last.status !== undefined && report.status !== undefined)) Object.assign(last, report);
    else result.push({ ...report });
  }
  return result;
}
