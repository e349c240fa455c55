/**
 * The signing process: a child a sign worker starts with SIGN_PROCESS_TUNING, so signing's CPU and
 * memory stay out of the API process. It takes tasks over IPC one at a time and answers each; it
 * exits when its parent closes the channel (it has had its share of tasks, or waited long enough
 * for the next: run-task.ts) or goes (a worker killed mid-sign leaves nothing running).
 */
import { isIpaError, sign, warmDigestCache } from '@sideport/ipa';
import type { RunnerResult, RunnerTask } from './runner-protocol.js';

async function run(task: RunnerTask): Promise<RunnerResult> {
  if (task.kind === 'warm') {
    const warmed = await warmDigestCache(task.input, { cacheDir: task.cacheDir });
    return { ok: true, kind: 'warm', fromCache: warmed.fromCache };
  }
  // The mode picks its dylibs from the lists, and the substrate among them, in sign(); DUP's new
  // bundle id is the app's own and the task's suffix, read in the same opening of the IPA.
  const report = await sign({
    input: task.input,
    output: task.output,
    identity: {
      ...('p12' in task.identity
        ? { p12: Buffer.from(task.identity.p12), password: task.identity.password }
        : { certPem: task.identity.certPem, keyPem: task.identity.keyPem }),
      chain: (task.identity.chain ?? []).map((c) => Buffer.from(c)),
    },
    profile: Buffer.from(task.profile),
    mode: task.mode,
    dylibs: task.dylibs,
    bundleIdSuffix: task.dupSuffix,
    cacheDir: task.cacheDir,
  });
  // What the app said it was before signing renamed anything; its bundle id as signed.
  const { app } = report;
  const main = report.bundles.find((b) => b.dir === app.dir)!;
  return {
    ok: true,
    kind: 'sign',
    bundleId: main.bundleId,
    bundleVersion: app.shortVersion ?? app.bundleVersion ?? '1.0',
    displayName: app.displayName ?? null,
  };
}

// The parent closes the channel when it wants no more tasks, or when it dies: either way, this ends.
process.on('disconnect', () => process.exit(0));
// One task at a time (the parent sends the next only after the answer).
process.on('message', (task: RunnerTask) => {
  // Every failure of the task becomes its answer; should sending it fail, the parent sees the exit.
  void run(task)
    .catch((err: unknown): RunnerResult => ({
      ok: false,
      message: err instanceof Error ? err.message : String(err),
      ...(isIpaError(err) ? { code: err.code } : {}),
    }))
    .then((result) => process.send!(result));
});
