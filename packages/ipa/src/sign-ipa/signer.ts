/**
 * What signing an IPA asks of a Mach-O signing engine, apart from any engine: engine.ts is this
 * package's, and tests or a service may bring their own. The phases of signIpa and the streaming
 * of large binaries (stream-binary.ts) both speak it.
 */
import type { PlistObject } from '../plist.js';
import type { StreamOptions } from '../sign/macho-sign-stream.js';

/** What the engine needs to sign one Mach-O file (every slice of it). */
export interface MachOSignRequest {
  identifier: string;
  /** The file's path in the IPA, for error messages (the identifier otherwise). */
  path?: string;
  teamId: string;
  isMainExecutable: boolean;
  /** The app supports an iOS before 11: a SHA-1 CodeDirectory beside SHA-256 whatever the file's own target. */
  appNeedsSha1?: boolean;
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
    options?: StreamOptions,
  ): Promise<{ cdhash: Buffer; sizeBytes: number }>;
}
