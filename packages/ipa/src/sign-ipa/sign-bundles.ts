/**
 * The last phase of a sign: every bundle inside-out (loose dylibs, then nested bundles, then what
 * holds them), each sealed in its CodeResources before its executable is signed, since the
 * executable's signature covers the seal. Then the mode's files nobody signed are written.
 */
import { posix } from 'node:path';
import type { FileDigests } from '../digest/index.js';
import { buildCodeResources, type SealedFile, type SealedNested } from '../resources/index.js';
import { appTargetsBeforeSha256 } from '../sign/digest-choice.js';
import type { BinarySigner } from './binary-signer.js';
import { digestBuffer, digestStream } from './hashes.js';
import type { BundlePlan, SigningPlan } from './plan.js';
import type { SigningFiles } from './signing-files.js';

export interface BundleSigning {
  readonly plan: SigningPlan;
  readonly files: SigningFiles;
  readonly binaries: BinarySigner;
  /** The profile's team, every signature's. */
  readonly teamId: string;
  /** The designated requirement of an identifier, as signed by this identity. */
  readonly requirement: (identifier: string) => string;
  readonly onProgress?: ((step: { bundle: string; done: number; total: number }) => void) | undefined;
}

const relative = (bundle: BundlePlan, path: string) => path.slice(bundle.dir.length + 1);

/** Signs every bundle; answers the cdhash of each bundle's executable, by bundle directory. */
export async function signBundles(
  job: BundleSigning,
  digests: ReadonlyMap<string, FileDigests>,
): Promise<Map<string, Buffer>> {
  const { plan, files, binaries, teamId, requirement } = job;
  const cdhashes = new Map<string, Buffer>();
  // Every file of an app that supports an iOS before 11 keeps a SHA-1 CodeDirectory (digest-choice.ts).
  const minimumOs = plan.app.info.MinimumOSVersion;
  const appNeedsSha1 = appTargetsBeforeSha256(typeof minimumOs === 'string' ? minimumOs : undefined);
  let done = 0;
  for (const bundle of plan.inOrder) {
    const nested: SealedNested[] = [];
    for (const loose of bundle.looseCode) {
      const identifier = posix.basename(loose).replace(/\.dylib$/, '');
      const cdhash = await binaries.sign(loose, {
        identifier,
        teamId,
        isMainExecutable: false,
        appNeedsSha1,
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
    const codeResources = buildCodeResources(await sealResources(files, bundle, digests), nested);
    await files.write(`${bundle.dir}/_CodeSignature/CodeResources`, codeResources);
    if (bundle.executable) {
      const cdhash = await binaries.sign(
        bundle.executable,
        {
          identifier: bundle.bundleId,
          teamId,
          isMainExecutable: bundle.isMain,
          appNeedsSha1,
          infoPlist: await files.read(`${bundle.dir}/Info.plist`),
          codeResources,
        },
        bundle.isMain,
      );
      cdhashes.set(bundle.dir, cdhash);
    }
    job.onProgress?.({ bundle: bundle.dir, done: ++done, total: plan.inOrder.length });
  }
  for (const [name, bytes] of [...files.replaced]) await files.write(name, bytes);
  return cdhashes;
}

/**
 * Digests of every file of a bundle as it will be written (signed nested code and new plists
 * included), except the bundle's own executable and _CodeSignature; CodeResources decides, by its
 * rules, which of them each seal lists.
 */
async function sealResources(
  files: SigningFiles,
  bundle: BundlePlan,
  precomputed: ReadonlyMap<string, FileDigests>,
): Promise<SealedFile[]> {
  const { archive, replaced, written } = files;
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
