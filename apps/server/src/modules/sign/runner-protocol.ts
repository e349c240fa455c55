import type { SignMode } from '@sideport/ipa';

/** The signing identity as it crosses to the signing process (IPC turns Buffers into Uint8Arrays). */
export type RunnerIdentity = ({ p12: Uint8Array; password: string } | { certPem: string; keyPem: string }) & {
  chain?: readonly Uint8Array[];
};

/** One task of the signing process (sign-runner.ts). */
export type RunnerTask =
  | {
      kind: 'sign';
      input: string;
      output: string;
      identity: RunnerIdentity;
      profile: Uint8Array;
      mode: SignMode;
      /** Modes 1-3: the operator's dylibs, in load order. */
      inject: Array<{ name: string; path: string }>;
      /** Bundled beside them for dylibs that depend on CydiaSubstrate. */
      substrate?: { name: string; path: string };
      /** Mode 4: the copy's bundle id is the app's own followed by this segment. */
      dupTag?: string;
      cacheDir: string;
    }
  | { kind: 'warm'; input: string; cacheDir: string };

export type RunnerResult =
  | { ok: true; kind: 'sign'; bundleId: string; bundleVersion: string; displayName: string | null }
  | { ok: true; kind: 'warm'; fromCache: boolean }
  /** `code`: an IpaError's, a refusal that would repeat on every attempt. */
  | { ok: false; message: string; code?: string };
