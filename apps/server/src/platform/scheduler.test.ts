import { afterEach, describe, expect, it, vi } from 'vitest';
import { createScheduler, type PeriodicTask } from './scheduler.js';

/** A run that lasts until the test ends it. */
function heldRuns() {
  const ends: Array<() => void> = [];
  let running = 0;
  let mostAtOnce = 0;
  let runs = 0;
  return {
    run: () =>
      new Promise<void>((resolve) => {
        runs += 1;
        running += 1;
        mostAtOnce = Math.max(mostAtOnce, running);
        ends.push(() => {
          running -= 1;
          resolve();
        });
      }),
    /** Ends the oldest run under way and lets the scheduler react (a few promise turns, no timer). */
    async endOne() {
      ends.shift()?.();
      for (let i = 0; i < 10; i++) await Promise.resolve();
    },
    get runs() {
      return runs;
    },
    get mostAtOnce() {
      return mostAtOnce;
    },
    get running() {
      return running;
    },
  };
}

const quiet = { warn() {} };

describe('the scheduler of periodic work', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs a task every interval, skipping a tick that finds it still running', async () => {
    vi.useFakeTimers();
    const held = heldRuns();
    const scheduler = createScheduler([{ name: 'sweep', intervalMs: 1000, run: held.run }], quiet);
    scheduler.start();
    expect(held.runs).toBe(0);
    await vi.advanceTimersByTimeAsync(1000);
    expect(held.runs).toBe(1);
    await vi.advanceTimersByTimeAsync(3000);
    expect(held.runs).toBe(1);
    await held.endOne();
    await vi.advanceTimersByTimeAsync(1000);
    expect(held.runs).toBe(2);
    expect(held.mostAtOnce).toBe(1);
    await held.endOne();
    await scheduler.stop();
  });

  it('runs a task at start when asked, and once more after a run when woken during it', async () => {
    const held = heldRuns();
    let wake = () => {};
    let isListening = false;
    const scheduler = createScheduler(
      [
        {
          name: 'registration',
          intervalMs: 3_600_000,
          runAtStart: true,
          run: held.run,
          wakeOn: (listener) => {
            wake = listener;
            isListening = true;
            return () => (isListening = false);
          },
        },
      ],
      quiet,
    );
    scheduler.start();
    expect(held.runs).toBe(1);
    wake();
    wake();
    expect(held.runs).toBe(1);
    await held.endOne();
    expect(held.runs).toBe(2);
    await held.endOne();
    expect(held.runs).toBe(2);
    wake();
    expect(held.runs).toBe(3);
    await held.endOne();
    expect(held.mostAtOnce).toBe(1);
    await scheduler.stop();
    expect(isListening).toBe(false);
  });

  it("logs a failed run with the task's name and runs the task again", async () => {
    const logged: Array<{ obj: object; msg: string }> = [];
    let wake = () => {};
    let runs = 0;
    const task: PeriodicTask = {
      name: 'file-sweep',
      intervalMs: 3_600_000,
      runAtStart: true,
      run: async () => {
        runs += 1;
        throw new Error('the store is unreachable');
      },
      wakeOn: (listener) => {
        wake = listener;
        return () => {};
      },
    };
    const scheduler = createScheduler([task], { warn: (obj, msg) => logged.push({ obj, msg }) });
    scheduler.start();
    await vi.waitFor(() => expect(logged).toHaveLength(1));
    expect(logged[0]!.msg).toBe('file-sweep failed');
    expect(logged[0]!.obj).toMatchObject({
      task: 'file-sweep',
      err: { message: 'the store is unreachable' },
    });
    wake();
    await vi.waitFor(() => expect(logged).toHaveLength(2));
    expect(runs).toBe(2);
    await scheduler.stop();
  });

  it('stops: waits for the runs under way, then runs nothing more', async () => {
    vi.useFakeTimers();
    const held = heldRuns();
    let wake = () => {};
    const scheduler = createScheduler(
      [
        {
          name: 'purge',
          intervalMs: 1000,
          runAtStart: true,
          run: held.run,
          wakeOn: (listener) => {
            wake = listener;
            return () => {};
          },
        },
      ],
      quiet,
    );
    scheduler.start();
    let isStopped = false;
    const stopping = scheduler.stop().then(() => (isStopped = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(isStopped).toBe(false);
    await held.endOne();
    await stopping;
    expect(isStopped).toBe(true);
    wake();
    await vi.advanceTimersByTimeAsync(5000);
    expect(held.runs).toBe(1);
    expect(held.running).toBe(0);
  });

  it('puts a task off for as long as the part it needs asked (Retry-After), then runs it again', async () => {
    vi.useFakeTimers();
    let runs = 0;
    let isThrottled = true;
    const warnings: object[] = [];
    const scheduler = createScheduler(
      [
        {
          name: 'device-registration',
          intervalMs: 1000,
          run: async () => {
            runs += 1;
            if (isThrottled)
              throw Object.assign(new Error('429 from App Store Connect'), { retryAfterMs: 10_000 });
          },
        },
      ],
      { warn: (obj) => void warnings.push(obj) },
    );
    scheduler.start();
    await vi.advanceTimersByTimeAsync(1000);
    expect(runs).toBe(1);
    expect(warnings).toEqual([
      expect.objectContaining({ task: 'device-registration', retryAfterMs: 10_000 }),
    ]);
    // Nine more intervals pass inside the ten seconds asked: no run hammers the throttled part.
    await vi.advanceTimersByTimeAsync(9000);
    expect(runs).toBe(1);
    isThrottled = false;
    await vi.advanceTimersByTimeAsync(1000);
    expect(runs).toBe(2);
    await vi.advanceTimersByTimeAsync(1000);
    expect(runs).toBe(3);
    await scheduler.stop();
  });
});
