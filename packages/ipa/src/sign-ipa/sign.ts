/**
 * The signing entry point the service calls: an identity as PKCS#12 or PEM, a profile, a mode of
 * docs/product.md (src/sign-modes.ts) and the operator's dylibs of each kind. The mode picks which
 * of them go in (mode-needs.ts); the rest is signIpa's phases.
 */
import { loadIdentity, type IdentitySource } from '../identity.js';
import { createMachOSigner } from './engine.js';
import { resolveModeFromKinds, type ModeDylibs } from './mode-needs.js';
import type { SignMode } from './modes.js';
import { signInMode, type AppDescription, type SignIpaReport } from './sign-ipa.js';

export type { DylibSource, ModeDylibs } from './mode-needs.js';

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
  /**
   * Mode 4 without bundleIdPrefix: the copy's bundle id is the app's own followed by
   * `.<suffix>`; other modes leave it unused, so a caller may give it whatever the mode.
   */
  readonly bundleIdSuffix?: string;
  /** Keeps resource digests per app version; signing a version again then costs little more than the copy. */
  readonly cacheDir?: string;
  readonly onProgress?: (step: { bundle: string; done: number; total: number }) => void;
  readonly now?: Date;
}

export interface SignReport extends SignIpaReport {
  /** What the app said it was before signing renamed anything (refused when its Info.plist names no identifier or executable). */
  app: AppDescription;
}

export async function sign(options: SignOptions): Promise<SignReport> {
  const identity = loadIdentity(options.identity);
  const mode = await resolveModeFromKinds({
    ...(options.mode === undefined ? {} : { mode: options.mode }),
    ...(options.dylibs === undefined ? {} : { dylibs: options.dylibs }),
    ...(options.bundleIdPrefix === undefined ? {} : { bundleIdPrefix: options.bundleIdPrefix }),
    ...(options.bundleIdSuffix === undefined ? {} : { bundleIdSuffix: options.bundleIdSuffix }),
  });
  const report = await signInMode(mode, {
    input: options.input,
    output: options.output,
    identity,
    profile: options.profile,
    signer: createMachOSigner(identity, options.now === undefined ? undefined : () => options.now!),
    describeApp: true,
    ...(options.cacheDir === undefined ? {} : { cacheDir: options.cacheDir }),
    ...(options.onProgress === undefined ? {} : { onProgress: options.onProgress }),
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  return { ...report, app: report.app! };
}
