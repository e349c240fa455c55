/**
 * Fills the resource digest cache of an app version before anyone signs it, so the first sign of
 * it costs what a re-sign does. A service calls it when a version arrives (its upload was just
 * read whole anyway); the signature needs no identity or profile, only the archive.
 */
import { digestEntriesCached, readCachedDigests, writeCachedDigests } from '../digest/index.js';
import { entryTablesIn } from '../zip/entry-table.js';
import { openZip } from '../zip/index.js';
import { planSigning, resourceEntries } from './plan.js';

export interface WarmDigestOptions {
  readonly cacheDir: string;
  /** Threads that read and digest the resources (one by default; each is a V8 heap more). */
  readonly digestWorkers?: number;
}

/**
 * Digests the resources of `input` into `cacheDir` for every mode: modes 0-3 seal the same
 * resources (their replaced files are code or new), DUP seals them less each bundle's Info.plist,
 * which it rewrites. Returns whether the digests were already cached.
 */
export async function warmDigestCache(
  input: string,
  options: WarmDigestOptions,
): Promise<{ fromCache: boolean; entries: number }> {
  // The entry table is kept too: the version's first sign then opens its IPA at once.
  const archive = await openZip(input, { entryTableDir: entryTablesIn(options.cacheDir) });
  try {
    const plan = await planSigning(archive);
    // Every mode gives the app and its extensions the new profile (edits.ts does the same).
    const profiles = new Set(
      plan.inOrder.filter((b) => b.isMain).map((b) => `${b.dir}/embedded.mobileprovision`),
    );
    const resources = resourceEntries(archive, plan, profiles);
    const { digests, fromCache } = await digestEntriesCached(input, resources, {
      cacheDir: options.cacheDir,
      ...(options.digestWorkers === undefined ? {} : { workers: options.digestWorkers }),
    });
    const plists = new Set(plan.inOrder.map((b) => `${b.dir}/Info.plist`));
    const dup = resources.filter((e) => !plists.has(e.name));
    if ((await readCachedDigests(options.cacheDir, dup)) === undefined) {
      await writeCachedDigests(
        options.cacheDir,
        dup,
        new Map(dup.map((e) => [e.name, digests.get(e.name)!])),
      );
    }
    return { fromCache, entries: resources.length };
  } finally {
    archive.close();
  }
}
