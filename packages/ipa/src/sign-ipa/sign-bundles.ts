/**
 * The last phase of a sign: every bundle inside-out (loose dylibs, then nested bundles, then what
 * holds them), each sealed in its CodeResources before its executable is signed, since the
 * executable's signature covers the seal. Then the mode's files nobody signed are written.
 */
import { posix } from 'node:path';
import type { FileDigests } from '../digest/index.js';
import {
  buildCodeResources,
  buildSealTemplate,
  fillSealTemplate,
  type SealedFile,
  type SealedNested,
} from '../resources/index.js';
import { appTargetsBeforeSha256 } from '../sign/digest-choice.js';
import type { BinarySigner } from './binary-signer.js';
import { digestBuffer, digestStream } from './hashes.js';
import type { BundlePlan, SigningPlan } from './plan.js';
import { keepSealTemplate, readSealTemplate, sealTemplateFile } from './seal-cache.js';
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
  /**
   * Where each bundle's CodeResources is kept as a template (seal-cache.ts), and the key of the
   * version's resource digests the signs share; without it every seal is laid out in full.
   */
  readonly seals?: { cacheDir: string; digestsKey: string } | undefined;
}

const relative = (bundle: BundlePlan, path: string) => path.slice(bundle.dir.length + 1);

/** Every file of an app that supports an iOS before 11 keeps a SHA-1 CodeDirectory (digest-choice.ts). */
export function appNeedsSha1(plan: SigningPlan): boolean {
  const minimumOs = plan.app.info.MinimumOSVersion;
  return appTargetsBeforeSha256(typeof minimumOs === 'string' ? minimumOs : undefined);
}

/** Signs every bundle; answers the cdhash of each bundle's executable, by bundle directory. */
export async function signBundles(
  job: BundleSigning,
  digests: ReadonlyMap<string, FileDigests>,
): Promise<Map<string, Buffer>> {
  const { plan, files, binaries, teamId, requirement } = job;
  const cdhashes = new Map<string, Buffer>();
  const needsSha1 = appNeedsSha1(plan);
  let done = 0;
  for (const bundle of plan.inOrder) {
    const nested: SealedNested[] = [];
    for (const loose of bundle.looseCode) {
      const identifier = posix.basename(loose).replace(/\.dylib$/, '');
      const cdhash = await binaries.sign(loose, {
        identifier,
        teamId,
        isMainExecutable: false,
        appNeedsSha1: needsSha1,
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
    const codeResources = await sealBundle(files, bundle, digests, nested, job.seals);
    await files.write(`${bundle.dir}/_CodeSignature/CodeResources`, codeResources);
    if (bundle.executable) {
      const cdhash = await binaries.sign(
        bundle.executable,
        {
          identifier: bundle.bundleId,
          teamId,
          isMainExecutable: bundle.isMain,
          appNeedsSha1: needsSha1,
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
 * The bundle's CodeResources. With a seal cache, only the entries this sign changes are written
 * into the kept template; the first sign of a version (or one whose template does not fit) lays
 * it out in full and keeps the template.
 */
async function sealBundle(
  files: SigningFiles,
  bundle: BundlePlan,
  precomputed: ReadonlyMap<string, FileDigests>,
  nested: readonly SealedNested[],
  seals: BundleSigning['seals'],
): Promise<Buffer> {
  const { shared, own } = bundleFiles(files, bundle, precomputed);
  if (seals === undefined)
    return buildCodeResources(await sealed(files, bundle, precomputed, [...shared, ...own]), nested);
  const changing = new Map<string, 'file' | 'code'>();
  for (const name of own) changing.set(relative(bundle, name), 'file');
  for (const code of nested) changing.set(code.path, 'code');
  const file = sealTemplateFile(seals.cacheDir, seals.digestsKey, bundle.dir, changing);
  const ownSealed = await sealed(files, bundle, precomputed, own);
  const template = await readSealTemplate(file);
  if (template !== undefined) {
    const filled = fillSealTemplate(
      template,
      new Map(ownSealed.map((f) => [f.path, f])),
      new Map(nested.map((code) => [code.path, code])),
    );
    if (filled !== undefined) return filled;
  }
  const all = [...(await sealed(files, bundle, precomputed, shared)), ...ownSealed];
  const made = buildSealTemplate(all, nested, new Set(changing.keys()));
  await keepSealTemplate(file, made.template);
  return made.bytes;
}

/**
 * The files of a bundle as it will be written (signed nested code and new plists included), except
 * its own executable and _CodeSignature, by archive path: `shared`, whose digests are the version's
 * (the same in every sign of it), and the bundle's `own` in this sign (replaced, written, or not
 * among the version's digests). CodeResources decides, by its rules, which of them each seal lists.
 */
function bundleFiles(
  files: SigningFiles,
  bundle: BundlePlan,
  precomputed: ReadonlyMap<string, FileDigests>,
): { shared: string[]; own: string[] } {
  const { archive, replaced, written } = files;
  const prefix = `${bundle.dir}/`;
  const sealedName = (name: string) =>
    name.startsWith(prefix) && name !== bundle.executable && !name.startsWith(`${prefix}_CodeSignature/`);
  const own = new Set<string>();
  for (const name of [...replaced.keys(), ...written.keys()]) if (sealedName(name)) own.add(name);
  const shared: string[] = [];
  for (const entry of archive.entries) {
    if (entry.isDirectory || entry.isSymlink || !sealedName(entry.name) || own.has(entry.name)) continue;
    if (precomputed.has(entry.name)) shared.push(entry.name);
    else own.add(entry.name);
  }
  return { shared, own: [...own] };
}

/** Each named file's digests, as the file will be written: the mode's bytes, signed code's, the version's, else read now. */
async function sealed(
  files: SigningFiles,
  bundle: BundlePlan,
  precomputed: ReadonlyMap<string, FileDigests>,
  names: readonly string[],
): Promise<SealedFile[]> {
  const { archive, replaced, written } = files;
  const result: SealedFile[] = [];
  for (const name of names) {
    const content = replaced.get(name);
    const digests = content
      ? digestBuffer(content)
      : (written.get(name) ??
        precomputed.get(name) ??
        (await digestStream(await archive.openEntryStream(archive.find(name)!))));
    // Named, not spread: kept digests are read through getters (digest/cache.ts).
    result.push({ path: relative(bundle, name), sha1: digests.sha1, sha256: digests.sha256 });
  }
  return result;
}
