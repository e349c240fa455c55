import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { AgentJob } from '@sideport/contracts';
import { readStoreMetadata, verifyDecrypted } from '@sideport/ipa';
import { isApiError, type AgentApi } from './api.js';
import { commandEnvironment, failureOf, runCommand } from './command.js';
import { holdLease, type Lease, type LeaseDeps } from './lease.js';
import { parseCommandLine } from './lines.js';
import { endedEarly, whileReachable } from './retry.js';
import { createUploadProgress } from './upload-progress.js';
import { openJobFolder } from './work-dir.js';

export interface DecryptJobDeps extends LeaseDeps {
  api: AgentApi;
  /** The operator's --command. */
  command: string;
  /** An absolute folder; each job works in a new folder inside it, removed afterwards (work-dir.ts). */
  workDir: string;
}

const NO_FILE = 'The command exited 0 but wrote no file at SIDEPORT_OUTPUT.';
const NO_VERSION_ID =
  'The store version is unknown: the command printed no app_ver_id line and the IPA has no iTunesMetadata.plist with softwareVersionExternalIdentifier.';

const isFile = (file: string) =>
  stat(file).then(
    (s) => s.isFile(),
    () => false,
  );

/**
 * One decrypt job (docs/agent-protocol.md): run the operator's command with the job's environment,
 * forward its report lines as heartbeats, then check the IPA it wrote and upload it, or report why
 * not. Never throws: whatever happens is reported to the server or logged.
 */
export async function runDecryptJob(job: AgentJob, deps: DecryptJobDeps): Promise<void> {
  const { log } = deps;
  const tag = `job ${job.id}`;
  const lease = holdLease(job, deps);
  const folder = await openJobFolder(deps.workDir, job.id);
  const jobDir = folder.dir;
  const output = path.join(jobDir, `${job.app_id}.ipa`);
  const learnt: { appVerId?: string; version?: string } = {};
  try {
    const result = await runCommand(deps.command, {
      env: commandEnvironment({
        SIDEPORT_JOB_ID: job.id,
        SIDEPORT_COUNTRY: job.country.toLowerCase(),
        SIDEPORT_APP_ID: job.app_id,
        SIDEPORT_BUNDLE_ID: job.bundle_id,
        SIDEPORT_APP_VER_ID: job.app_ver_id ?? '',
        SIDEPORT_VERSION: job.version ?? '',
        SIDEPORT_OUTPUT: output,
      }),
      cwd: jobDir,
      signal: lease.signal,
      onStdoutLine: (line) => {
        const parsed = parseCommandLine(line);
        if (parsed.kind === 'invalid')
          return log.warn(`${tag}: ignored the line ${JSON.stringify(line)}: ${parsed.problem}`);
        log.info(`${tag} | ${line}`);
        if (parsed.kind !== 'report') return;
        if (parsed.report.app_ver_id !== undefined) learnt.appVerId = parsed.report.app_ver_id;
        if (parsed.report.version !== undefined) learnt.version = parsed.report.version;
        lease.report(parsed.report);
      },
      onStderrLine: (line) => log.info(`${tag} ! ${line}`),
    });
    if (await endedEarly(lease, log, tag)) return;
    await lease.drain();
    const failure = failureOf(result);
    if (failure) return await lease.fail(failure.reason, { unsupported: failure.unsupported });
    if (!(await isFile(output))) return await lease.fail(NO_FILE);

    // An app-level job's version: the command's app_ver_id line, else the store's own metadata.
    const metadata = await readStoreMetadata(output).catch(() => undefined);
    const appVerId = learnt.appVerId ?? metadata?.appVerId ?? job.app_ver_id ?? undefined;
    if (appVerId === undefined) return await lease.fail(NO_VERSION_ID);
    const version = learnt.version ?? metadata?.version;

    // The job's own version when it names one; for the current version, what the command reported.
    const verdict = await verifyDecrypted(output, {
      bundleId: job.bundle_id,
      appId: job.app_id,
      ...(job.app_ver_id !== null
        ? { appVerId: job.app_ver_id, ...(job.version !== null ? { version: job.version } : {}) }
        : {
            ...(learnt.appVerId !== undefined ? { appVerId: learnt.appVerId } : {}),
            ...(learnt.version !== undefined ? { version: learnt.version } : {}),
            versionSource: 'reported' as const,
          }),
    });
    if (!verdict.ok) {
      log.warn(`${tag}: the IPA is refused before upload and not uploaded: ${verdict.reason}`);
      return await lease.fail(verdict.reason);
    }
    log.info(
      `${tag}: the IPA is decrypted (${verdict.report.machOs.length} Mach-O files checked); uploading store version ${appVerId}`,
    );
    await upload(job, output, { app_ver_id: appVerId, ...(version ? { version } : {}) }, lease, deps);
  } catch (err) {
    // Not the command's doing (the work folder's disk is full, the IPA vanished): the attempt failed.
    log.error(`${tag}: ${(err as Error).message}`);
    if (!(await endedEarly(lease, log, tag)))
      await lease.fail(`The agent could not finish the job: ${(err as Error).message}`);
  } finally {
    await lease.release();
    await folder.release();
  }
}

async function upload(
  job: AgentJob,
  file: string,
  query: { app_ver_id: string; version?: string },
  lease: Lease,
  deps: DecryptJobDeps,
) {
  const { api, log } = deps;
  const tag = `job ${job.id}`;
  try {
    const done = await whileReachable(lease, log, `${tag}: the upload`, async () => {
      const progress = createUploadProgress(log, tag);
      try {
        return await api.upload(job.id, file, query, { signal: lease.signal, onProgress: progress.update });
      } finally {
        progress.finish();
      }
    });
    if (done)
      log.info(`${tag}: Done: store version ${done.app_ver_id} (${done.version}), ${done.size_bytes} bytes`);
    else await endedEarly(lease, log, tag);
  } catch (err) {
    // An upload sent again after its answer was lost, when the first one had been accepted.
    if (isApiError(err, 'finished'))
      return log.info(`${tag}: Done: the server had accepted the upload already`);
    if (isApiError(err, 'lease-lost'))
      return log.warn(`${tag}: the server took the job back before the upload (${err.message})`);
    // 422: the server checked the file and refused it; it has recorded the reason and the attempt.
    if (isApiError(err, 'refused') && err.status === 422)
      return log.warn(`${tag}: the server refused the IPA: ${err.message}`);
    log.warn(`${tag}: the upload was refused: ${(err as Error).message}`);
    await lease.fail((err as Error).message);
  }
}
