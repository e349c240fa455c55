/**
 * The second phase of a sign: the entries signing leaves as they are go out first, as their raw
 * stored bytes, while the resources are digested (or their digests read from the cache). Signed
 * code and new files follow them: knowing where the copies end, they are written as soon as they
 * are ready, during the copy when no digest is missing.
 */
import { assertMachOsDecrypted } from '../check.js';
import {
  digestEntries,
  readCachedDigests,
  versionKey,
  writeCachedDigests,
  type FileDigests,
} from '../digest/index.js';
import { isMachO } from '../macho/index.js';
import type { ZipArchive, ZipEntry } from '../zip/index.js';
import {
  copiedSize,
  createSignedZipWriter,
  type SignedZipWriter,
  type ZipEntryWriter,
} from '../zip/writer.js';
import { dropPrefixCopy, type StartedCopy } from '../zip/output-file.js';
import { copyTemplate, type CopyAhead } from './copy-template.js';
import { outputBudget } from './output-budget.js';
import { codeEntries, resourceEntries, type SigningPlan } from './plan.js';
import { copyUnchanged } from './write-zip.js';

export interface CopyOptions {
  /** Keeps each version's resource digests, so signing it again skips inflating its resources. */
  readonly cacheDir?: string | undefined;
  /** Threads that digest the resources while they are copied. */
  readonly digestWorkers?: number | undefined;
  /** Stops the digest threads when signing fails, and the copy when digesting does. */
  readonly stop: AbortController;
  /** Called while signing waits for the digests: spool what will be streamed. */
  readonly whileDigesting: () => void;
}

export interface SignedOutput {
  readonly writer: SignedZipWriter;
  /** Once the output is closed: keeps its copied stretch for the next sign, when this one should (copy-template.ts). */
  keepCopies(output: string): Promise<void>;
  /** Where signed code and new files go: after the copied entries. */
  readonly out: ZipEntryWriter;
  /**
   * Copies the unchanged entries, digests the resources beside the copy, checks that the copied
   * ones hold no encrypted code, and runs `sign` with the digests: at once with cached digests
   * (signing runs beside the copy), else once the copy and the digests are done (and cached).
   * Settles once everything has; the first failure stops the rest.
   */
  copyAndSign(
    options: CopyOptions,
    sign: (digests: ReadonlyMap<string, FileDigests>, digestsKey: string | undefined) => Promise<void>,
  ): Promise<void>;
}

/**
 * Opens the output: what signing rewrites (code, the mode's files, every CodeResources) is left
 * out of the copy, and the output may hold what the copy and those add up to (output-budget.ts).
 */
export async function openSignedOutput(job: {
  archive: ZipArchive;
  plan: SigningPlan;
  replaced: ReadonlyMap<string, Buffer>;
  input: string;
  output: string;
  /** Where the version's digests, code and copied stretch are kept between signs. */
  cacheDir?: string | undefined;
  /** The time new entries carry. */
  modified?: Date;
  /**
   * With `cacheDir`: the stretch last used for this input and mode, and its copy if one was
   * started before the archive was opened. The copy is taken over here: the writer takes it when
   * it is this sign's stretch, else it is dropped, also when opening fails.
   */
  ahead?: { copy: CopyAhead; started: StartedCopy | undefined } | undefined;
}): Promise<SignedOutput> {
  // Whose the copy started ahead is: this function's until the writer takes it or it is dropped.
  const ahead = { started: job.ahead?.started };
  try {
    return await openOutput(job, ahead);
  } catch (err) {
    if (ahead.started !== undefined) await dropPrefixCopy(ahead.started);
    throw err;
  }
}

async function openOutput(
  job: Parameters<typeof openSignedOutput>[0],
  ahead: { started: StartedCopy | undefined },
): Promise<SignedOutput> {
  const { archive, plan, replaced } = job;
  const code = codeEntries(plan);
  const resources = resourceEntries(archive, plan, replaced);
  const rewritten = new Set([
    ...code,
    ...replaced.keys(),
    ...plan.inOrder.map((b) => `${b.dir}/_CodeSignature/CodeResources`),
  ]);
  const keep = (entry: ZipEntry) => !rewritten.has(entry.name);
  // Entries copied as they are must hold no encrypted code either: the resources are sniffed as
  // they are digested (or were, for the cache), the few others here.
  const resourceNames = new Set(resources.map((entry) => entry.name));
  const others = archive.entries.filter(
    (e) => keep(e) && !e.isDirectory && !e.isSymlink && !resourceNames.has(e.name),
  );
  const otherHeads = await archive.readEntryHeads(others, 4);
  const otherMachOs = others.filter((_, i) => isMachO(otherHeads[i]!));
  const assertCopiedDecrypted = (digests: ReadonlyMap<string, FileDigests>): Promise<void> =>
    assertMachOsDecrypted(archive, [
      ...resources.filter((entry) => digests.get(entry.name)?.isMachO === true),
      ...otherMachOs,
    ]);
  const maxOutputBytes = outputBudget({
    inputBytes: archive.sizeBytes,
    entries: archive.entries,
    code: archive.entries.filter((entry) => code.has(entry.name)),
    addedBytes: [...replaced.values()].map((bytes) => bytes.length),
    bundleDirs: plan.inOrder.map((bundle) => bundle.dir),
  });
  const copied = archive.entries.filter(keep);
  const copiedBytes = copied.reduce((sum, entry) => sum + copiedSize(entry), 0);
  const template =
    job.cacheDir === undefined
      ? undefined
      : copyTemplate(job.cacheDir, archive.entries, rewritten, copiedBytes);
  const kept = await template?.find();
  // The copy started before opening is this sign's when it is of the stretch found here.
  const { started } = ahead;
  const taken = started !== undefined && started.template === kept ? started : undefined;
  if (started !== undefined && taken === undefined) await dropPrefixCopy(started);
  if (kept !== undefined && taken === undefined) await job.ahead?.copy.note(kept);
  // From here the writer owns the copy: a writer that fails to open drops it itself.
  ahead.started = undefined;
  const writer = await createSignedZipWriter(job.input, job.output, {
    maxBytes: maxOutputBytes,
    ...(job.modified === undefined ? {} : { modified: job.modified }),
    ...(kept === undefined
      ? {}
      : { prefix: { template: kept, entries: copied, ...(taken === undefined ? {} : { started: taken }) } }),
  });
  // A sign that found the digests kept is a version's second or later: its copy is worth keeping.
  let keepCopies = false;
  return {
    writer,
    out: writer.from(copiedBytes),
    async keepCopies(output) {
      if (!keepCopies || template === undefined) return;
      await template.keep(output);
      // Kept by this sign or by another at the same time: the next sign of this file copies it ahead.
      const keptNow = await template.find();
      if (keptNow !== undefined) await job.ahead?.copy.note(keptNow);
    },
    async copyAndSign(options, sign) {
      const { stop } = options;
      // With a kept stretch, the output already holds the copies.
      const copying =
        kept === undefined ? copyUnchanged(writer, archive, keep, stop.signal) : Promise.resolve();
      copying.catch((err: unknown) => stop.abort(err));
      const copyDone = copying.then(
        () => undefined,
        () => undefined,
      );
      // Every resource that signing leaves as it is: digested as it is copied, or read from the
      // cache (while the copy runs).
      // The digests' key, which the kept seals are keyed by too (seal-cache.ts).
      const digestsKey = options.cacheDir === undefined ? undefined : versionKey(resources);
      const cached =
        options.cacheDir === undefined
          ? undefined
          : await readCachedDigests(options.cacheDir, resources, digestsKey);
      if (cached !== undefined) {
        keepCopies = kept === undefined;
        const signing = assertCopiedDecrypted(cached).then(() => sign(cached, digestsKey));
        signing.catch((err: unknown) => stop.abort(err));
        await settleAll([copying, signing]);
        return;
      }
      // Without cached digests, a digest thread reads and hashes the resources while the copy
      // runs: two cores at work. Once the copy is done, this thread digests beside it.
      const digesting = digestEntries(job.input, resources, {
        ...(options.digestWorkers === undefined ? {} : { workers: options.digestWorkers }),
        helpWhen: copyDone,
        signal: stop.signal,
      });
      digesting.catch((err: unknown) => stop.abort(err));
      options.whileDigesting();
      const [, digests] = await settleAll([copying, digesting]);
      await assertCopiedDecrypted(digests);
      if (options.cacheDir !== undefined)
        await writeCachedDigests(options.cacheDir, resources, digests, digestsKey);
      await sign(digests, digestsKey);
    },
  };
}

/**
 * Waits for every one of the promises, then answers their values or throws the first failure
 * (the others, stopped by it, fail with the same reason or a consequence of it).
 */
async function settleAll<T extends readonly unknown[]>(work: { [K in keyof T]: Promise<T[K]> }): Promise<T> {
  const results = await Promise.allSettled(work);
  const failed = results.find((result) => result.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
  return results.map((result) => (result as PromiseFulfilledResult<unknown>).value) as unknown as T;
}
