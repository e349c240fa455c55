import { posix } from 'node:path';
import type { PlistObject } from '../plist.js';
import { requirementSubjectFor, requirementText } from '../sign/requirements.js';
import { assertProfileUsable, parseProfile, type Profile } from '../profile.js';
import type { SigningIdentity } from '../identity.js';
import { buildCodeResources, type SealedFile, type SealedNested } from '../resources/index.js';
import { openZip, type ZipArchive, type ZipEntry } from '../zip/index.js';
import { createGroupRemap, mergeEntitlements } from '../sign/entitlements.js';
import { readEmbeddedEntitlements } from '../sign/read-signature.js';
import { signBinaryStreaming, spoolBinary, type SpooledBinary } from './stream-binary.js';
import { digestEntries, readCachedDigests, writeCachedDigests, type FileDigests } from '../digest/index.js';
import { digestBuffer, digestStream } from './hashes.js';
import { planSigning, type BundlePlan, type SigningPlan } from './plan.js';
import { applyDup, applyInjection, signingModeOf, validateModeOptions, type ModeOptions } from './modes.js';
import { createSignedZipWriter, type SignedZipWriter, type ZipEntryWriter } from '../zip/writer.js';
import { copyUnchanged } from './write-zip.js';
import { assertMachOsDecrypted } from '../check.js';
import { isMachO } from '../macho/index.js';
import { outputBudget } from './output-budget.js';

/** What the engine needs to sign one Mach-O file (every slice of it). */
export interface MachOSignRequest {
  identifier: string;
  /** The file's path in the IPA, for error messages (the identifier otherwise). */
  path?: string;
  teamId: string;
  isMainExecutable: boolean;
  /** Main executables only (AMFI refuses a non-main binary that has entitlements). */
  entitlements?: PlistObject;
  infoPlist?: Buffer;
  codeResources?: Buffer;
}

/** The Mach-O signing engine, bound to an identity: answers the signed file and its cdhash. */
export interface MachOSigner {
  sign(binary: Buffer, request: MachOSignRequest): { signed: Buffer; cdhash: Buffer };
  /** The same for a binary read through a window and written to a sink, for binaries too large to hold. */
  signStream?(
    read: (offset: number, length: number) => Promise<Buffer>,
    sizeBytes: number,
    request: MachOSignRequest,
    sink: (chunk: Buffer) => Promise<void>,
  ): Promise<{ cdhash: Buffer; sizeBytes: number }>;
}

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

const DEFAULT_STREAM_ABOVE_BYTES = 8 * 1024 * 1024;

const relative = (bundle: BundlePlan, path: string) => path.slice(bundle.dir.length + 1);

/** Archive paths of every Mach-O signing signs: executables and loose dylibs. */
const codeEntries = (plan: SigningPlan) =>
  new Set(plan.inOrder.flatMap((b) => [...(b.executable ? [b.executable] : []), ...b.looseCode]));

/**
 * The entries whose digests CodeResources needs: the app's regular files that signing leaves as
 * they are (not code, not a file it replaces, not an old signature). Their set is the digest
 * cache's key, so it differs by mode only where a mode replaces files (DUP's Info.plists).
 */
export function resourceEntries(
  archive: ZipArchive,
  plan: SigningPlan,
  replaced: { has(name: string): boolean },
): ZipEntry[] {
  const code = codeEntries(plan);
  return archive.entries.filter(
    (e) =>
      !e.isDirectory &&
      !e.isSymlink &&
      e.name.startsWith(`${plan.app.dir}/`) &&
      !code.has(e.name) &&
      !replaced.has(e.name) &&
      !e.name.includes('/_CodeSignature/'),
  );
}

/**
 * Re-signs an IPA for an identity and provisioning profile: nested code first, each bundle's
 * resources sealed in its CodeResources, entitlements on main executables only. Entries that
 * signing does not change are copied as raw compressed bytes.
 */
export async function signIpa(options: SignIpaOptions): Promise<SignIpaReport> {
  const now = options.now ?? new Date();
  validateModeOptions(options);
  const profile = parseProfile(options.profile);
  assertProfileUsable(profile, options.identity.certificate, now);
  const archive = await openZip(options.input);
  let writer: SignedZipWriter | undefined;
  // Where signed code and new files go: after the copied entries (see below).
  let out: ZipEntryWriter | undefined;
  const spools = new Map<string, Promise<SpooledBinary>>();
  // Stops the digest threads when signing fails, and the copy when digesting does.
  const stop = new AbortController();
  try {
    const plan = await planSigning(archive);
    const replaced = new Map<string, Buffer>();
    const cdhashes = new Map<string, Buffer>();
    const maxBytes = options.maxBinaryBytes ?? 2 * 1024 * 1024 * 1024;
    // Who issued the certificate decides the requirement's form; only the identifier varies.
    const subject = requirementSubjectFor('', options.identity);
    const requirement = (identifier: string) => requirementText({ ...subject, identifier });
    const read = async (name: string) =>
      replaced.get(name) ?? archive.readEntry(archive.find(name)!, maxBytes);
    // Entries already in the output, by their digests: signed code leaves memory once written.
    const written = new Map<string, FileDigests>();
    // Only the app's own executable is sealed by no bundle: no digests for it.
    const sealedByAnother = (name: string) => name !== plan.app.executable;
    const emit = async (name: string, bytes: Buffer) => {
      if (sealedByAnother(name)) written.set(name, digestBuffer(bytes));
      replaced.delete(name);
      const mode = archive.find(name)?.unixMode ?? (/\.dylib$/.test(name) ? 0o100755 : 0o100644);
      await out!.add(name, bytes, { unixMode: mode });
    };
    const streamAbove = options.streamAboveBytes ?? DEFAULT_STREAM_ABOVE_BYTES;
    /**
     * Signs one Mach-O entry and writes it. A main executable keeps its own entitlements, so they
     * are read from the binary first. Binaries over `streamAbove` are spooled to a temporary file
     * and signed as they stream into the output, so memory stays flat whatever their size.
     */
    const signOne = async (name: string, request: MachOSignRequest, isMain = false): Promise<Buffer> => {
      const entry = archive.find(name);
      const inMemory = replaced.get(name);
      const withOwn = (own: PlistObject | undefined): MachOSignRequest =>
        isMain
          ? { ...request, path: name, entitlements: entitlementsFor(profile, request.identifier, own, dup) }
          : { ...request, path: name };
      // A main executable keeps its own entitlements; a plain dylib carries none.
      if (
        inMemory !== undefined ||
        entry === undefined ||
        entry.uncompressedSizeBytes <= streamAbove ||
        !options.signer.signStream
      ) {
        const binary = inMemory ?? (await read(name));
        const { signed, cdhash } = options.signer.sign(
          binary,
          withOwn(isMain ? ownEntitlements(binary, name) : undefined),
        );
        await emit(name, signed);
        return cdhash;
      }
      const signStream = options.signer.signStream.bind(options.signer);
      const spooled = await spoolOf(entry);
      try {
        const { cdhash, digests } = await signBinaryStreaming(spooled, entry, out!, { signStream }, withOwn, {
          digests: sealedByAnother(name),
        });
        if (digests !== undefined) written.set(name, digests);
        return cdhash;
      } finally {
        spools.delete(name);
        await spooled.close();
      }
    };
    const isStreamed = (name: string) => {
      const entry = archive.find(name);
      return (
        !replaced.has(name) &&
        entry !== undefined &&
        entry.uncompressedSizeBytes > streamAbove &&
        options.signer.signStream !== undefined
      );
    };
    /** Binaries to stream are inflated to temporary files one after another (see below). */
    let lastSpool: Promise<unknown> = Promise.resolve();
    const spoolOf = (entry: ZipEntry): Promise<SpooledBinary> => {
      let spooled = spools.get(entry.name);
      if (spooled === undefined) {
        spooled = lastSpool.then(() => spoolBinary(archive, entry));
        spooled.catch(() => undefined); // a failure surfaces when the binary is signed
        lastSpool = spooled.catch(() => undefined);
        spools.set(entry.name, spooled);
      }
      return spooled;
    };

    const mode = signingModeOf(options.mode ?? 0);
    const injects = mode.injects.length > 0;
    // The modes edit plists and the main executable; fetch just those (one binary at most).
    const readSync = new Map<string, Buffer>();
    for (const bundle of plan.inOrder)
      readSync.set(`${bundle.dir}/Info.plist`, await read(`${bundle.dir}/Info.plist`));
    if (injects) readSync.set(plan.app.executable!, await read(plan.app.executable!));
    const current = (name: string) => replaced.get(name) ?? readSync.get(name)!;
    let dup: DupRenaming | undefined;
    if (mode.renamesBundleIds) {
      const oldAppId = plan.app.bundleId;
      const { plists, renameId } = applyDup(plan, options.bundleIdPrefix!, current);
      for (const [name, bytes] of plists) replaced.set(name, bytes);
      dup = { renameId, remapGroup: createGroupRemap(oldAppId, plan.app.bundleId) };
    }
    if (injects)
      for (const [name, bytes] of applyInjection(plan, options, current)) replaced.set(name, bytes);
    for (const bundle of plan.inOrder) {
      if (bundle.isMain) replaced.set(`${bundle.dir}/embedded.mobileprovision`, options.profile);
    }
    const code = codeEntries(plan);
    const resources = resourceEntries(archive, plan, replaced);
    // Unchanged entries go out first, as their raw stored bytes, from now on. Signed code and the
    // new files follow them: knowing where the copies end, they are written as soon as they are
    // ready, during the copy when no digest is missing.
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
    writer = await createSignedZipWriter(options.input, options.output, { maxBytes: maxOutputBytes });
    const copiedBytes = archive.entries.reduce(
      (sum, entry) => (keep(entry) ? sum + writer!.copiedSize(entry) : sum),
      0,
    );
    out = writer.from(copiedBytes);
    const copying = copyUnchanged(writer, archive, keep, stop.signal);
    copying.catch((err: unknown) => stop.abort(err));
    const copyDone = copying.then(
      () => undefined,
      () => undefined,
    );
    // Every resource that signing leaves as it is: digested as it is copied, or read from the cache
    // (while the copy runs).
    const cached =
      options.cacheDir === undefined ? undefined : await readCachedDigests(options.cacheDir, resources);
    // Without cached digests, a digest thread reads and hashes the resources while the copy runs:
    // two cores at work. Once the copy is done, this thread digests beside it.
    const digesting =
      cached === undefined
        ? digestEntries(options.input, resources, {
            ...(options.digestWorkers === undefined ? {} : { workers: options.digestWorkers }),
            helpWhen: copyDone,
            signal: stop.signal,
          })
        : undefined;
    digesting?.catch((err: unknown) => stop.abort(err));
    if (cached === undefined) {
      // Signing waits for the digests: meanwhile, spool what it will stream. (With cached digests
      // signing runs beside the copy from the start.)
      for (const bundle of plan.inOrder)
        for (const name of [...bundle.looseCode, ...(bundle.executable ? [bundle.executable] : [])])
          if (isStreamed(name)) void spoolOf(archive.find(name)!);
    }
    const signAll = async (digests: ReadonlyMap<string, FileDigests>): Promise<void> => {
      let done = 0;
      for (const bundle of plan.inOrder) {
        const nested: SealedNested[] = [];
        for (const loose of bundle.looseCode) {
          const identifier = posix.basename(loose).replace(/\.dylib$/, '');
          const cdhash = await signOne(loose, {
            identifier,
            teamId: profile.teamId,
            isMainExecutable: false,
          });
          nested.push({ path: relative(bundle, loose), cdhash, requirement: requirement(identifier) });
        }
        for (const child of plan.inOrder) {
          if (child === bundle || plan.ownerOf(child.dir) !== bundle) continue;
          nested.push({
            path: relative(bundle, child.dir),
            cdhash: cdhashes.get(child.dir)!,
            requirement: requirement(child.bundleId),
          });
        }
        const codeResources = buildCodeResources(
          await sealResources(archive, bundle, replaced, written, digests),
          nested,
        );
        await emit(`${bundle.dir}/_CodeSignature/CodeResources`, codeResources);
        if (bundle.executable) {
          const cdhash = await signOne(
            bundle.executable,
            {
              identifier: bundle.bundleId,
              teamId: profile.teamId,
              isMainExecutable: bundle.isMain,
              infoPlist: await read(`${bundle.dir}/Info.plist`),
              codeResources,
            },
            bundle.isMain,
          );
          cdhashes.set(bundle.dir, cdhash);
        }
        options.onProgress?.({ bundle: bundle.dir, done: ++done, total: plan.inOrder.length });
      }
      for (const [name, bytes] of [...replaced]) await emit(name, bytes);
    };
    if (cached !== undefined) {
      const signing = assertCopiedDecrypted(cached).then(() => signAll(cached));
      signing.catch((err: unknown) => stop.abort(err));
      await settleAll([copying, signing]);
    } else {
      const [, digests] = await settleAll([copying, digesting!]);
      await assertCopiedDecrypted(digests);
      if (options.cacheDir !== undefined) await writeCachedDigests(options.cacheDir, resources, digests);
      await signAll(digests);
    }
    await writer.close();
    writer = undefined;
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
    };
  } catch (err) {
    stop.abort(err);
    await writer?.abort();
    throw err;
  } finally {
    // Spools of binaries never signed (the sign failed first).
    await Promise.all(
      [...spools.values()].map((spooled) =>
        spooled.then(
          (s) => s.close(),
          () => undefined,
        ),
      ),
    );
    archive.close();
  }
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

/** Under DUP, how ids inside entitlements and app group names follow the app. */
interface DupRenaming {
  renameId: (id: string) => string;
  remapGroup: (group: string) => string;
}

/**
 * A main executable's entitlements: the ones it was signed with, restricted to what the profile
 * grants and moved to the profile's team (and, under DUP, to the new identifiers), plus what the
 * profile grants for this bundle id. An executable that cannot be read keeps the profile's alone.
 */
function entitlementsFor(
  profile: Profile,
  bundleId: string,
  own: PlistObject | undefined,
  dup: DupRenaming | undefined,
): PlistObject {
  return mergeEntitlements({
    profile,
    bundleId,
    ...(own === undefined ? {} : { own }),
    ...(dup === undefined ? {} : { remapId: dup.renameId, remapGroup: dup.remapGroup }),
  });
}

/** The entitlements a binary was signed with; a damaged old signature counts as none (it is replaced). */
function ownEntitlements(binary: Buffer, where: string): PlistObject | undefined {
  try {
    return readEmbeddedEntitlements(binary, where);
  } catch {
    return undefined;
  }
}

/**
 * Digests of every file of a bundle as it will be written (signed nested code and new plists
 * included), except the bundle's own executable and _CodeSignature; CodeResources decides, by its
 * rules, which of them each seal lists.
 */
async function sealResources(
  archive: ZipArchive,
  bundle: BundlePlan,
  replaced: ReadonlyMap<string, Buffer>,
  written: ReadonlyMap<string, FileDigests>,
  precomputed: ReadonlyMap<string, FileDigests>,
): Promise<SealedFile[]> {
  const prefix = `${bundle.dir}/`;
  const names = new Set<string>();
  for (const entry of archive.entries)
    if (!entry.isDirectory && !entry.isSymlink && entry.name.startsWith(prefix)) names.add(entry.name);
  for (const name of [...replaced.keys(), ...written.keys()]) if (name.startsWith(prefix)) names.add(name);
  const sealed: SealedFile[] = [];
  for (const name of [...names].sort()) {
    const path = name.slice(prefix.length);
    if (name === bundle.executable || path.startsWith('_CodeSignature/')) continue;
    const content = replaced.get(name);
    const digests = content
      ? digestBuffer(content)
      : (written.get(name) ??
        precomputed.get(name) ??
        (await digestStream(await archive.openEntryStream(archive.find(name)!))));
    sealed.push({ path, ...digests });
  }
  return sealed;
}
