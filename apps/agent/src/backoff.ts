import { setTimeout as delay } from 'node:timers/promises';

export interface BackoffOptions {
  /** The first wait's ceiling. */
  baseMs?: number;
  /** No wait is longer than this, however long the trouble lasts. */
  maxMs?: number;
  random?: () => number;
}

/**
 * Capped exponential backoff with jitter: the ceiling doubles per failure up to `maxMs`, and each
 * wait is between half the ceiling and the ceiling, so a fleet of agents that lost the same
 * server does not come back in step, and none hammers it with near-zero waits.
 */
export function createBackoff({ baseMs = 500, maxMs = 30_000, random = Math.random }: BackoffOptions = {}) {
  let failures = 0;
  return {
    nextDelayMs(): number {
      const ceiling = Math.min(maxMs, baseMs * 2 ** failures);
      failures = Math.min(failures + 1, 32);
      return Math.round(ceiling / 2 + (random() * ceiling) / 2);
    },
    reset() {
      failures = 0;
    },
  };
}

export type Backoff = ReturnType<typeof createBackoff>;

/** Waits `ms`, or less when `signal` aborts first (it never throws). */
export async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return;
  await delay(ms, undefined, signal ? { signal } : {}).catch(() => {});
}
