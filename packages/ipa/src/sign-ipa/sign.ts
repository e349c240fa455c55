/**
 * The signing entry point the service calls: an identity as PKCS#12 or PEM, a profile, a mode of
 * docs/product.md (src/sign-modes.ts) and the operator's dylibs of each kind. The mode picks which
 * of them go in; everything else is signIpa's.
 */
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { IpaError } from '../errors.js';
import { loadIdentity, type IdentitySource } from '../identity.js';
import type { DylibKind } from '../sign-modes.js';
import { createMachOSigner } from './engine.js';
import { isSubstrate, signingModeOf, type InjectedDylib, type SignMode } from './modes.js';
import { signIpa, type SignIpaReport } from './sign-ipa.js';

/** A dylib as a file's path (named after the file) or as its name and bytes. */
export type DylibSource = string | InjectedDylib;

/** The operator's dylibs: one or several of each kind, each a path or its bytes. */
export interface ModeDylibs {
  /** Injected by the modes that inject IAP dylibs (src/sign-modes.ts). */
  readonly iap?: DylibSource | readonly DylibSource[];
  /** Injected by the modes that inject IGG dylibs. */
  readonly igg?: DylibSource | readonly DylibSource[];
  /**
   * Bundled beside them when they depend on CydiaSubstrate. Without it, the first of the mode's
   * dylibs that isSubstrate names is bundled so; those are never given a load command.
   */
  readonly substrate?: DylibSource;
}

export interface SignOptions {
  readonly input: string;
  readonly output: string;
  readonly identity: IdentitySource;
  /** embedded.mobileprovision bytes. */
  readonly profile: Buffer;
  readonly mode?: SignMode;
  readonly dylibs?: ModeDylibs;
  /** Mode 4: the copy's bundle identifier; nested ids under the app's keep their suffix. */
  readonly bundleIdPrefix?: string;
  /** Keeps resource digests per app version; signing a version again then costs little more than the copy. */
  readonly cacheDir?: string;
  readonly onProgress?: (step: { bundle: string; done: number; total: number }) => void;
  readonly now?: Date;
}

const sourcesOf = <T>(kind: T | readonly T[] | undefined): readonly T[] =>
  kind === undefined ? [] : Array.isArray(kind) ? kind : [kind as T];

const nameOf = (source: DylibSource) => (typeof source === 'string' ? basename(source) : source.name);

const load = async (source: DylibSource): Promise<InjectedDylib> =>
  typeof source === 'string' ? { name: basename(source), bytes: await readFile(source) } : source;

/**
 * The dylibs a mode injects, in load order, each once (IAP before IGG); refuses a mode whose
 * dylibs are not configured, naming the kind.
 */
export function dylibsForMode<T extends DylibSource>(
  mode: SignMode,
  dylibs: { readonly [K in DylibKind]?: T | readonly T[] } = {},
): T[] {
  const picked = signingModeOf(mode).injects.flatMap((kind) => {
    const sources = sourcesOf(dylibs[kind]);
    if (sources.length === 0) {
      throw new IpaError(
        'DYLIB_MISSING',
        `Expected the ${kind.toUpperCase()} dylib for mode ${mode}, found none configured.`,
      );
    }
    return sources;
  });
  return [...new Set(picked)];
}

/**
 * The mode's dylibs split into those injected with a load command and the substrate bundled for
 * them (the one given, or the first among them that isSubstrate names); none when nothing is injected.
 */
async function injectionOf(mode: SignMode, dylibs: ModeDylibs | undefined) {
  const picked = dylibsForMode(mode, dylibs);
  const inject = picked.filter((source) => !isSubstrate(nameOf(source)));
  const substrate = dylibs?.substrate ?? picked.find((source) => isSubstrate(nameOf(source)));
  return {
    inject: await Promise.all(inject.map(load)),
    substrate: substrate !== undefined && inject.length > 0 ? await load(substrate) : undefined,
  };
}

export async function sign(options: SignOptions): Promise<SignIpaReport> {
  const identity = loadIdentity(options.identity);
  const mode = options.mode ?? 0;
  const { inject, substrate } = await injectionOf(mode, options.dylibs);
  return signIpa({
    input: options.input,
    output: options.output,
    identity,
    profile: options.profile,
    signer: createMachOSigner(identity, options.now === undefined ? undefined : () => options.now!),
    mode,
    ...(inject.length > 0 ? { inject } : {}),
    ...(substrate !== undefined ? { substrate } : {}),
    ...(options.bundleIdPrefix === undefined ? {} : { bundleIdPrefix: options.bundleIdPrefix }),
    ...(options.cacheDir === undefined ? {} : { cacheDir: options.cacheDir }),
    ...(options.onProgress === undefined ? {} : { onProgress: options.onProgress }),
    ...(options.now === undefined ? {} : { now: options.now }),
  });
}
