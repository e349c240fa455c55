import { posix } from 'node:path';
import { IpaError } from '../errors.js';
import { addDylibLoad, rewriteDylibPath } from '../macho/index.js';
import { buildBinaryPlist, buildXmlPlist, type PlistObject, type PlistValue } from '../plist.js';
import type { SigningPlan } from './plan.js';

/** Spec section 3 sign types. */
export type SignMode = 0 | 1 | 2 | 3 | 4;

/** An operator-supplied dylib to inject (modes 1-3); Sideport ships none. */
export interface InjectedDylib {
  /** File name in the app's Frameworks folder, e.g. 'libtweak.dylib'. */
  name: string;
  bytes: Buffer;
  /** LC_LOAD_WEAK_DYLIB: the app still launches if the dylib cannot load. */
  weak?: boolean;
}

export interface ModeOptions {
  mode?: SignMode;
  inject?: readonly InjectedDylib[];
  /** Bundled CydiaSubstrate replacement: injected dylibs that depend on CydiaSubstrate load it instead. */
  substrate?: InjectedDylib;
  /** Mode 4: prepended to every bundle id, so the copy installs beside the original. */
  bundleIdPrefix?: string;
}

const SAFE_NAME = /^[A-Za-z0-9._+-]+\.dylib$/;
const BUNDLE_ID = /^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*$/;
const isSubstrate = (name: string) => /CydiaSubstrate|libsubstrate\.dylib$/.test(name);

/** Checks the options of a mode before any work: a clear reason instead of a half-made IPA. */
export function validateModeOptions(options: ModeOptions) {
  const mode = options.mode ?? 0;
  if (![0, 1, 2, 3, 4].includes(mode)) throw new IpaError('MODE_INVALID', `Expected a sign mode from 0 to 4, found ${mode}.`);
  const dylibs = [...(options.inject ?? []), ...(options.substrate ? [options.substrate] : [])];
  if (mode >= 1 && mode <= 3 && (options.inject ?? []).length === 0) {
    throw new IpaError('DYLIB_MISSING', `Mode ${mode} injects the operator's dylibs, but none was given.`);
  }
  for (const dylib of dylibs) {
    if (!SAFE_NAME.test(dylib.name)) throw new IpaError('DYLIB_MISSING', `Expected a plain .dylib file name to inject, found '${dylib.name}'.`);
  }
  if (mode === 4 && !(options.bundleIdPrefix && BUNDLE_ID.test(options.bundleIdPrefix))) {
    throw new IpaError('BUNDLE_ID_INVALID', `Mode 4 (DUP) needs a bundle id prefix of letters, digits, '-' and '.', found '${options.bundleIdPrefix ?? ''}'.`);
  }
}

/**
 * Mode 4: every bundle id becomes `<prefix>.<old id>` (extensions keep their suffix, so they stay
 * under the app's id), and every Info.plist string naming an old id (WKCompanionAppBundleIdentifier,
 * WKAppBundleIdentifier, NSExtension attributes) names the new one. Returns the rewritten plists.
 */
export function applyDup(plan: SigningPlan, prefix: string, read: (name: string) => Buffer): Map<string, Buffer> {
  const renamed = new Map(plan.inOrder.map((b) => [b.bundleId, `${prefix}.${b.bundleId}`]));
  const rename = (value: PlistValue): PlistValue =>
    typeof value === 'string'
      ? (renamed.get(value) ?? value)
      : Array.isArray(value)
        ? value.map(rename)
        : value && typeof value === 'object' && !(value instanceof Date) && !(value instanceof Uint8Array)
          ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, rename(v)]))
          : value;
  const plists = new Map<string, Buffer>();
  for (const bundle of plan.inOrder) {
    const path = `${bundle.dir}/Info.plist`;
    const info = rename(bundle.info) as PlistObject;
    const wasBinary = read(path).subarray(0, 8).toString('latin1') === 'bplist00';
    plists.set(path, wasBinary ? buildBinaryPlist(info) : Buffer.from(buildXmlPlist(info)));
    bundle.info = info;
    bundle.bundleId = renamed.get(bundle.bundleId)!;
  }
  return plists;
}

/**
 * Modes 1-3: copies the dylibs into the app's Frameworks, points their CydiaSubstrate dependency
 * at the bundled substrate when one is given, and adds a load command to the main executable.
 * Returns the new and changed files; the new dylibs are signed as the app's loose code.
 */
export function applyInjection(plan: SigningPlan, options: ModeOptions, read: (name: string) => Buffer): Map<string, Buffer> {
  const app = plan.app;
  const files = new Map<string, Buffer>();
  const frameworks = `${app.dir}/Frameworks`;
  const substratePath = options.substrate ? `@executable_path/Frameworks/${options.substrate.name}` : undefined;
  let executable = read(app.executable!);
  for (const dylib of [...(options.substrate ? [options.substrate] : []), ...(options.inject ?? [])]) {
    const target = `${frameworks}/${dylib.name}`;
    let bytes = dylib.bytes;
    if (substratePath && dylib !== options.substrate) {
      bytes = rewriteDylibPath(bytes, dylib.name, isSubstrate, substratePath).bytes;
    }
    files.set(target, bytes);
    app.looseCode.push(target);
    if (dylib !== options.substrate) {
      executable = addDylibLoad(executable, posix.basename(app.executable!), { path: `@executable_path/Frameworks/${dylib.name}`, weak: dylib.weak ?? false });
    }
  }
  files.set(app.executable!, executable);
  return files;
}
