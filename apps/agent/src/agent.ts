import { mkdir } from 'node:fs/promises';
import type { AgentJob, JobKind } from '@sideport/contracts';
import { isApiError, type AgentApi } from './api.js';
import { createBackoff, sleep } from './backoff.js';
import { runDecryptJob } from './decrypt-job.js';
import type { Logger } from './log.js';
import { runVersionsJob } from './versions-job.js';
import { clearStaleJobFolders, STALE_MS } from './work-dir.js';

export interface AgentOptions {
  api: AgentApi;
  log: Logger;
  command: string;
  versionsCommand?: string;
  /** Absolute. */
  workDir: string;
  /** Aborted on SIGINT/SIGTERM: no more claims; the job at hand is stopped and handed back. */
  stop: AbortSignal;
  /** Long-poll length of a claim (the server allows up to 30). */
  claimWaitSeconds?: number;
  /** Longest wait between tries while the server is unreachable. */
  maxBackoffMs?: number;
}

/** Exit codes of the agent. */
export const EXIT_OK = 0;
export const EXIT_TOKEN_REFUSED = 1;

function describe(job: AgentJob) {
  const target =
    job.app_ver_id === null
      ? 'the current store version'
      : `store version ${job.app_ver_id}${job.version ? ` (${job.version})` : ''}`;
  return `${job.kind} ${job.country}/${job.app_id} ${job.bundle_id}, ${job.kind === 'decrypt' ? `${target}, ` : ''}attempt ${job.attempt}`;
}

/**
 * Claims jobs one at a time and works them until `stop` aborts. An unreachable or restarting
 * server is waited out with capped exponential backoff and jitter; a refused token ends the agent.
 */
export async function runAgent(options: AgentOptions): Promise<number> {
  const { api, log, stop } = options;
  const kinds: JobKind[] = options.versionsCommand ? ['decrypt', 'versions'] : ['decrypt'];
  const backoff = createBackoff({ baseMs: 500, maxMs: options.maxBackoffMs ?? 30_000 });
  let unreachable = false;
  await mkdir(options.workDir, { recursive: true });
  // What a killed agent left (its job folder, a whole IPA in it) goes now, and hourly after.
  let clearedAt = 0;
  const clearStale = async () => {
    clearedAt = Date.now();
    await clearStaleJobFolders(options.workDir, log).catch((err: unknown) =>
      log.warn(`could not clear stale job folders: ${(err as Error).message}`),
    );
  };
  await clearStale();
  log.info(`waiting for ${kinds.join(' and ')} jobs`);
  while (!stop.aborted) {
    if (Date.now() - clearedAt > STALE_MS) await clearStale();
    let job: AgentJob | null;
    try {
      job = await api.claim(kinds, options.claimWaitSeconds ?? 25, stop);
    } catch (err) {
      if (stop.aborted) break;
      if (isApiError(err, 'unauthorized')) {
        log.error(
          `the server refused this agent's token (${err.message}). Ask an admin for a new one (npx sideport agent:create <name>).`,
        );
        return EXIT_TOKEN_REFUSED;
      }
      const waitMs = backoff.nextDelayMs();
      log.warn(
        `cannot claim jobs: ${(err as Error).message}; trying again in ${(waitMs / 1000).toFixed(1)} s`,
      );
      unreachable = true;
      await sleep(waitMs, stop);
      continue;
    }
    backoff.reset();
    if (unreachable) log.info('the server answers again');
    unreachable = false;
    if (!job) continue;
    log.info(`job ${job.id}: claimed: ${describe(job)}`);
    if (job.kind === 'versions' && options.versionsCommand) {
      await runVersionsJob(job, { ...options, versionsCommand: options.versionsCommand });
    } else {
      await runDecryptJob(job, options);
    }
  }
  log.info('stopped');
  return EXIT_OK;
}
