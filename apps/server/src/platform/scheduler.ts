import { isDatabaseFault, retryAfterMsOf } from './faults.js';

/**
 * The periodic work of a process (lease sweeps, the file sweep, device registration, the session
 * purge), in one place: each task runs every `intervalMs` on a timer that does not keep the
 * process alive, never overlaps itself (a tick that finds it running is skipped; a wake during a
 * run runs it once more after), and logs its failures under its name. A failure that says when to
 * come back (App Store Connect's `Retry-After`) puts the task's next runs off until then; a
 * database that does not answer is said so. `stop` ends the timers and waits for the runs under way.
 */

export interface PeriodicTask {
  /** Names the task in the log (`file-sweep failed`). */
  name: string;
  intervalMs: number;
  /** Runs once as soon as the scheduler starts, rather than first after one interval. */
  runAtStart?: boolean;
  run: () => Promise<unknown>;
  /**
   * Something else that starts a run (a device change any process told of): given the function
   * that asks for one, returns the function that stops listening.
   */
  wakeOn?: (wake: () => void) => () => void;
}

export interface Scheduler {
  /** Starts every task's timer (and runs those that run at start). */
  start(): void;
  /** Ends the timers and wake listeners; resolves once the runs under way have finished. */
  stop(): Promise<void>;
}

export function createScheduler(
  tasks: readonly PeriodicTask[],
  log: { warn(obj: object, msg: string): void },
  now: () => number = () => Date.now(),
): Scheduler {
  const stops: Array<() => void> = [];
  const running = new Set<Promise<void>>();
  let isStopped = false;

  function schedule(task: PeriodicTask) {
    let current: Promise<void> | undefined;
    let isWanted = false;
    /** Runs before this are put off: the part the task needs asked to be left alone until then. */
    let notBefore = 0;
    const runOnce = async () => {
      try {
        await task.run();
      } catch (err) {
        const retryAfterMs = retryAfterMsOf(err);
        if (retryAfterMs !== undefined) notBefore = now() + retryAfterMs;
        const why = isDatabaseFault(err) ? ': the database is not answering' : '';
        log.warn(
          { err, task: task.name, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) },
          `${task.name} failed${why}`,
        );
      }
    };
    const loop = async () => {
      do {
        isWanted = false;
        await runOnce();
      } while (isWanted && !isStopped);
    };
    const begin = () => {
      current = loop().finally(() => {
        running.delete(current!);
        current = undefined;
      });
      running.add(current);
    };
    const tick = () => {
      if (!isStopped && !current && now() >= notBefore) begin();
    };
    const wake = () => {
      if (isStopped || now() < notBefore) return;
      if (current) isWanted = true;
      else begin();
    };
    const timer = setInterval(tick, task.intervalMs);
    timer.unref();
    stops.push(() => clearInterval(timer));
    if (task.wakeOn) stops.push(task.wakeOn(wake));
    if (task.runAtStart) begin();
  }

  let isStarted = false;
  return {
    start() {
      if (isStarted) return;
      isStarted = true;
      for (const task of tasks) schedule(task);
    },
    async stop() {
      isStopped = true;
      for (const stop of stops.splice(0)) stop();
      await Promise.all(running);
    },
  };
}
