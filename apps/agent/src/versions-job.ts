import type { AgentJob, StoreVersion } from '@sideport/contracts';
import { isApiError, type AgentApi } from './api.js';
import { commandEnvironment, failureOf, runCommand } from './command.js';
import { holdLease, type LeaseDeps } from './lease.js';
import { parseVersionsLine } from './lines.js';
import { endedEarly, whileReachable } from './retry.js';

export interface VersionsJobDeps extends LeaseDeps {
  api: AgentApi;
  /** The operator's --versions-command. */
  versionsCommand: string;
  workDir: string;
}

/** The server takes at most this many versions of one app. */
const MAX_VERSIONS = 5000;

/**
 * One versions job: run the --versions-command with the app's SIDEPORT_COUNTRY, SIDEPORT_APP_ID and
 * SIDEPORT_BUNDLE_ID, and send the JSON lines it printed (newest first) as the app's version history.
 */
export async function runVersionsJob(job: AgentJob, deps: VersionsJobDeps): Promise<void> {
  const { api, log } = deps;
  const tag = `job ${job.id}`;
  const lease = holdLease(job, deps);
  const versions: StoreVersion[] = [];
  try {
    const result = await runCommand(deps.versionsCommand, {
      env: commandEnvironment({
        SIDEPORT_COUNTRY: job.country.toLowerCase(),
        SIDEPORT_APP_ID: job.app_id,
        SIDEPORT_BUNDLE_ID: job.bundle_id,
      }),
      cwd: deps.workDir,
      signal: lease.signal,
      onStdoutLine: (line) => {
        const parsed = parseVersionsLine(line);
        if (parsed.kind === 'version') versions.push(parsed.version);
        else if (parsed.kind === 'invalid')
          log.warn(`${tag}: ignored the line ${JSON.stringify(line)}: ${parsed.problem}`);
        else log.info(`${tag} | ${line}`);
      },
      onStderrLine: (line) => log.info(`${tag} ! ${line}`),
    });
    if (await endedEarly(lease, log, tag)) return;
    const failure = failureOf(result);
    if (failure) return await lease.fail(failure.reason, { unsupported: failure.unsupported });
    if (versions.length === 0) return await lease.fail('The versions command printed no versions.');
    if (versions.length > MAX_VERSIONS)
      log.warn(`${tag}: sending the newest ${MAX_VERSIONS} of ${versions.length} versions`);
    const sent = await whileReachable(lease, log, `${tag}: sending the versions`, async () => {
      await api.versions(job.id, versions.slice(0, MAX_VERSIONS));
      return true;
    });
    if (sent) log.info(`${tag}: sent ${Math.min(versions.length, MAX_VERSIONS)} versions`);
    else await endedEarly(lease, log, tag);
  } catch (err) {
    // The list was sent again after its answer was lost, when the first one had arrived.
    if (isApiError(err, 'finished')) return log.info(`${tag}: the server had the versions already`);
    log.error(`${tag}: ${(err as Error).message}`);
    if (!(await endedEarly(lease, log, tag)))
      await lease.fail(`The agent could not finish the job: ${(err as Error).message}`);
  } finally {
    await lease.release();
  }
}
