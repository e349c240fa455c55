/**
 * Fills the resource digest cache of an app version before anyone signs it, so the first sign of
 * it costs what a re-sign does. A service calls it when a version arrives (its upload was just
 * read whole anyway); the signature needs no identity or profile, only the archive.
 */
import { digestEntriesCached, readCachedDigests, writeCachedDigests } from '../digest/index.js';
import { entryTablesIn } from '../zip/entry-table.js';
import { openZip, type ZipArchive } from '../zip/index.js';
import { DEFAULT_DEFLATE_LEVEL } from '../zip/writer.js';
import { keepCodeAhead } from './code-ahead.js';
import { planSigning, resourceEntries, type SigningPlan } from './plan.js';
import { appNeedsSha1 } from './sign-bundles.js';
import { DEFAULT_STREAM_ABOVE_BYTES } from './sign-ipa.js';

export interface WarmDigestOptions {
  readonly cacheDir: string;
  /** Threads that read and digest the resources (one by default; each is a V8 heap more). */
  readonly digestWorkers?: number;
  /** The signs' streamAboveBytes (sign-ipa.ts), when not the default: the executable is kept when signs stream it. */
  readonly streamAboveBytes?: number;
}

/**
 * Digests the resources of `input` into `cacheDir` for every mode: modes 0-3 seal the same
 * resources (their replaced files are code or new), DUP seals them less each bundle's Info.plist,
 * which it rewrites. Beside the digests, the app's executable's code is kept as a sign keeps it
 * (code-ahead.ts), so the version's first sign signs it as the n-th does. Returns whether the
 * digests were already cached, and whether the executable's code is kept.
 */
export async function warmDigestCache(
  input: string,
  options: WarmDigestOptions,
): Promise<{ fromCache: boolean; entries: number; codeKept: boolean }> {
  // The entry table is kept too: the version's first sign then opens its IPA at once.
  const archive = await openZip(input, { entryTableDir: entryTablesIn(options.cacheDir) });
  try {
    const plan = await planSigning(archive);
    // Every mode gives the app and its extensions the new profile (edits.ts does the same).
    const profiles = new Set(
      plan.inOrder.filter((b) => b.isMain).map((b) => `${b.dir}/embedded.mobileprovision`),
    );
    const resources = resourceEntries(archive, plan, profiles);
    const [{ digests, fromCache }, codeKept] = await Promise.all([
      digestEntriesCached(input, resources, {
        cacheDir: options.cacheDir,
        ...(options.digestWorkers === undefined ? {} : { workers: options.digestWorkers }),
      }),
      keepAppCode(archive, plan, options),
    ]);
    const plists = new Set(plan.inOrder.map((b) => `${b.dir}/Info.plist`));
    const dup = resources.filter((e) => !plists.has(e.name));
    if ((await readCachedDigests(options.cacheDir, dup)) === undefined) {
      await writeCachedDigests(
        options.cacheDir,
        dup,
        new Map(dup.map((e) => [e.name, digests.get(e.name)!])),
      );
    }
    return { fromCache, entries: resources.length, codeKept };
  } finally {
    archive.close();
  }
}

/** Keeps the app's executable's code, when signs stream it (binary-signer.ts); whether it is kept. */
async function keepAppCode(
  archive: ZipArchive,
  plan: SigningPlan,
  options: WarmDigestOptions,
): Promise<boolean> {
  const name = plan.app.executable;
  const entry = name === undefined ? undefined : archive.find(name);
  if (
    entry === undefined ||
    entry.uncompressedSizeBytes <= (options.streamAboveBytes ?? DEFAULT_STREAM_ABOVE_BYTES)
  )
    return false;
  return keepCodeAhead(options.cacheDir, archive, entry, {
    appNeedsSha1: appNeedsSha1(plan),
    level: DEFAULT_DEFLATE_LEVEL,
  });
}
