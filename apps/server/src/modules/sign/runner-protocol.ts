import type { DylibKind, SignMode } from '@sideport/ipa';

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
      /** The operator's dylibs of each kind (paths); packages/ipa's sign() picks the mode's. */
      dylibs: Record<DylibKind, readonly string[]>;
      /**
       * The segment DUP's copy's bundle id ends with (`<app's id>.<suffix>`), decided with the
       * task; sign() uses it in a mode that renames bundle ids and reads the app's id itself.
       */
      dupSuffix: string;
      cacheDir: string;
    }
  | { kind: 'warm'; input: string; cacheDir: string };

export type RunnerResult =
  | { ok: true; kind: 'sign'; bundleId: string; bundleVersion: string; displayName: string | null }
  | { ok: true; kind: 'warm'; fromCache: boolean }
  /** `code`: an IpaError's, a refusal that would repeat on every attempt. */
  | { ok: false; message: string; code?: string };
