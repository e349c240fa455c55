/**
 * The signing entry point the service calls: an identity as PKCS#12 or PEM, a profile, a mode of
 * docs/product.md (0 normal, 1 IAP, 2 IGG, 3 IAP+IGG, 4 DUP) and, for modes 1-3, the operator's dylibs
 * named for their mode. Everything else is signIpa's.
 */
import { IpaError } from '../errors.js';
import { loadIdentity, type IdentitySource } from '../identity.js';
import { createMachOSigner } from './engine.js';
import type { InjectedDylib, SignMode } from './modes.js';
import { signIpa, type SignIpaReport } from './sign-ipa.js';

export interface ModeDylibs {
  /** Injected in modes 1 and 3. */
  readonly iap?: InjectedDylib;
  /** Injected in modes 2 and 3. */
  readonly igg?: InjectedDylib;
  /** Bundled beside them when they depend on CydiaSubstrate. */
  readonly substrate?: InjectedDylib;
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

/** The dylibs a mode injects, in load order; refuses a mode whose dylib is not configured. */
export function dylibsForMode(mode: SignMode, dylibs: ModeDylibs = {}): InjectedDylib[] {
  const kinds: ('iap' | 'igg')[] = mode === 1 ? ['iap'] : mode === 2 ? ['igg'] : mode === 3 ? ['iap', 'igg'] : [];
  return kinds.map((kind) => {
    const dylib = dylibs[kind];
    if (dylib === undefined) {
      throw new IpaError('DYLIB_MISSING', `Expected the ${kind.toUpperCase()} dylib for mode ${mode}, found none configured.`);
    }
    return dylib;
  });
}

export async function sign(options: SignOptions): Promise<SignIpaReport> {
  const identity = loadIdentity(options.identity);
  const mode = options.mode ?? 0;
  const inject = dylibsForMode(mode, options.dylibs);
  return signIpa({
    input: options.input,
    output: options.output,
    identity,
    profile: options.profile,
    signer: createMachOSigner(identity, options.now === undefined ? undefined : () => options.now!),
    mode,
    ...(inject.length > 0 ? { inject } : {}),
    ...(options.dylibs?.substrate !== undefined && inject.length > 0 ? { substrate: options.dylibs.substrate } : {}),
    ...(options.bundleIdPrefix === undefined ? {} : { bundleIdPrefix: options.bundleIdPrefix }),
    ...(options.cacheDir === undefined ? {} : { cacheDir: options.cacheDir }),
    ...(options.onProgress === undefined ? {} : { onProgress: options.onProgress }),
    ...(options.now === undefined ? {} : { now: options.now }),
  });
}
