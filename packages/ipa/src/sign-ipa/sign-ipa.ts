/**
 * Re-signs an IPA in three phases over one opening of the archive: plan the mode's edits
 * (edits.ts), copy what signing leaves as it is while digesting the resources (copy-digest.ts),
 * and sign the bundles inside-out (sign-bundles.ts), one binary at a time (binary-signer.ts).
 */
import { describeBundle, findAppBundle, readInfoPlist, type BundleInfo } from '../bundle.js';
import type { SigningIdentity } from '../identity.js';
import { assertProfileUsable, parseProfile, type Profile } from '../profile.js';
import { requirementSubjectFor, requirementText } from '../sign/requirements.js';
import { entryTablesIn } from '../zip/entry-table.js';
import { openZip, type ZipArchive } from '../zip/index.js';
import { dropPrefixCopy } from '../zip/output-file.js';
import type { SignedZipWriter } from '../zip/writer.js';
import { createBinarySigner, type BinarySigner } from './binary-signer.js';
import { openSignedOutput } from './copy-digest.js';
import { copyAhead } from './copy-template.js';
import { planEdits } from './edits.js';
import { resolveMode, type ModeOptions, type ResolvedMode } from './mode-needs.js';
import { planSigning, type BundlePlan } from './plan.js';
import { signBundles } from './sign-bundles.js';
import type { MachOSigner } from './signer.js';
import { createSigningFiles } from './signing-files.js';

export interface SignIpaOptions extends ModeOptions {
  input: string;
  output: string;
  identity: SigningIdentity;
  /** embedded.mobileprovision bytes. */
  profile: Buffer;
  signer: MachOSigner;
  now?: Date;
  /** Largest Mach-O read into memory, in bytes. */
  maxBinaryBytes?: number;
  /** Binaries larger than this are signed as they stream through a temporary file (8 MiB by default). */
  streamAboveBytes?: number;
  /** Keeps each version's resource digests, so signing it again skips inflating its resources. */
  cacheDir?: string;
  /** Threads that digest the resources while they are copied (one by default; each is a V8 heap more). */
  digestWorkers?: number;
  onProgress?: (step: { bundle: string; done: number; total: number }) => void;
}

export interface SignIpaReport {
  bundles: Array<{ dir: string; bundleId: string; kind: BundlePlan['kind']; cdhash: string }>;
  profile: Pick<Profile, 'name' | 'uuid' | 'teamId' | 'expirationDate'>;
}

/** What the app said it was before signing renamed anything: its folder and its Info.plist's fields. */
export type AppDescription = { dir: string } & BundleInfo;

export const DEFAULT_STREAM_ABOVE_BYTES = 8 * 1024 * 1024;
const DEFAULT_MAX_BINARY_BYTES = 2 * 1024 * 1024 * 1024;

/**
 * Re-signs an IPA for an identity and provisioning profile: nested code first, each bundle's
 * resources sealed in its CodeResources, entitlements on main executables only. Entries that
 * signing does not change are copied as raw compressed bytes. The mode is checked before any work.
 */
export async function signIpa(options: SignIpaOptions): Promise<SignIpaReport> {
  return signInMode(resolveMode(options), options);
}

/**
 * signIpa with its mode resolved (sign() resolves it from the operator's dylibs of each kind).
 * `describeApp`: the report also says what the app was (describeBundle's fields, refused as
 * describeBundle refuses), read in the same opening of the archive.
 */
export async function signInMode(
  mode: ResolvedMode,
  options: Omit<SignIpaOptions, keyof ModeOptions> & { describeApp?: boolean },
): Promise<SignIpaReport & { app?: AppDescription }> {
  const now = options.now ?? new Date();
  const profile = parseProfile(options.profile);
  assertProfileUsable(profile, options.identity.certificate, now);
  // The n-th sign of this file in this mode starts copying its kept stretch before anything else.
  const ahead =
    options.cacheDir === undefined
      ? undefined
      : await copyAhead(options.cacheDir, options.input, modeNames(mode));
  let started = await ahead?.start(options.output);
  let archive: ZipArchive;
  try {
    // A cache folder also keeps the input's entry table: the n-th sign of a version opens it at once.
    archive = await openZip(
      options.input,
      options.cacheDir === undefined ? {} : { entryTableDir: entryTablesIn(options.cacheDir) },
    );
  } catch (err) {
    if (started !== undefined) await dropPrefixCopy(started);
    throw err;
  }
  let writer: SignedZipWriter | undefined;
  let binaries: BinarySigner | undefined;
  const stop = new AbortController();
  try {
    const app = options.describeApp ? await describeApp(archive) : undefined;
    const plan = await planSigning(archive);
    const maxBinaryBytes = options.maxBinaryBytes ?? DEFAULT_MAX_BINARY_BYTES;
    const edits = await planEdits(plan, mode, options.profile, (name) =>
      archive.readEntry(archive.find(name)!, maxBinaryBytes),
    );
    // openSignedOutput takes the started copy over, to use or drop.
    const startedAhead = started;
    started = undefined;
    const output = await openSignedOutput({
      archive,
      plan,
      replaced: edits.replaced,
      input: options.input,
      output: options.output,
      cacheDir: options.cacheDir,
      ...(options.now === undefined ? {} : { modified: options.now }),
      ...(ahead === undefined ? {} : { ahead: { copy: ahead, started: startedAhead } }),
    });
    writer = output.writer;
    const files = createSigningFiles({
      archive,
      out: output.out,
      replaced: edits.replaced,
      appExecutable: plan.app.executable,
      maxBinaryBytes,
    });
    const signer = createBinarySigner({
      files,
      signer: options.signer,
      profile,
      dup: edits.dup,
      streamAboveBytes: options.streamAboveBytes ?? DEFAULT_STREAM_ABOVE_BYTES,
      codeCacheDir: options.cacheDir,
    });
    binaries = signer;
    // Who issued the certificate decides the requirement's form; only the identifier varies.
    const subject = requirementSubjectFor('', options.identity);
    let cdhashes = new Map<string, Buffer>();
    await output.copyAndSign(
      {
        cacheDir: options.cacheDir,
        digestWorkers: options.digestWorkers,
        stop,
        // Signing waits for the digests: meanwhile, spool what it will stream.
        whileDigesting: () => {
          for (const bundle of plan.inOrder)
            for (const name of [...bundle.looseCode, ...(bundle.executable ? [bundle.executable] : [])])
              signer.spoolAhead(name);
        },
      },
      async (digests, digestsKey) => {
        cdhashes = await signBundles(
          {
            plan,
            files,
            binaries: signer,
            teamId: profile.teamId,
            requirement: (identifier) => requirementText({ ...subject, identifier }),
            onProgress: options.onProgress,
            seals:
              options.cacheDir === undefined || digestsKey === undefined
                ? undefined
                : { cacheDir: options.cacheDir, digestsKey },
          },
          digests,
        );
      },
    );
    await writer.close();
    writer = undefined;
    await output.keepCopies(options.output);
    return {
      bundles: plan.inOrder.map((b) => ({
        dir: b.dir,
        bundleId: b.bundleId,
        kind: b.kind,
        cdhash: cdhashes.get(b.dir)?.toString('hex') ?? '',
      })),
      profile: {
        name: profile.name,
        uuid: profile.uuid,
        teamId: profile.teamId,
        expirationDate: profile.expirationDate,
      },
      ...(app === undefined ? {} : { app }),
    };
  } catch (err) {
    stop.abort(err);
    await writer?.abort();
    if (started !== undefined) await dropPrefixCopy(started);
    throw err;
  } finally {
    await binaries?.close();
    archive.close();
  }
}

/**
 * What of a mode decides which names a sign rewrites (the dylibs it adds), for the key of the
 * stretch copied ahead (copy-template.ts): another mode, or other dylibs, names another stretch.
 */
const modeNames = (mode: ResolvedMode): string =>
  JSON.stringify([mode.type, mode.inject.map((dylib) => dylib.name), mode.substrate?.name ?? null]);

/** The app as its Info.plist describes it, refused when that names no identifier or executable. */
async function describeApp(archive: ZipArchive): Promise<AppDescription> {
  const bundle = findAppBundle(archive.entries);
  return {
    dir: bundle.dir,
    ...describeBundle(await readInfoPlist(archive, bundle.dir), `${bundle.dir}/Info.plist`),
  };
}
