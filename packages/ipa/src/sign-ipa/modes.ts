/**
 * What the modes do to an app, once mode-needs.ts has accepted one: DUP's renaming of bundle ids
 * and the injection of dylibs. Each answers the files it changes or adds.
 */
import { posix } from 'node:path';
import { IpaError } from '../errors.js';
import { addDylibLoad, rewriteDylibPath } from '../macho/index.js';
import { buildBinaryPlist, buildXmlPlist, type PlistObject, type PlistValue } from '../plist.js';
import type { SigningPlan } from './plan.js';

export type { SignMode } from '../sign-modes.js';

/** An operator-supplied dylib to inject (modes 1-3); Sideport ships none. */
export interface InjectedDylib {
  /** File name in the app's Frameworks folder, e.g. 'libtweak.dylib'. */
  name: string;
  bytes: Buffer;
  /** LC_LOAD_WEAK_DYLIB: the app still launches if the dylib cannot load. */
  weak?: boolean;
}

/**
 * Whether a dylib, by its file name or install name, is CydiaSubstrate (or a replacement named
 * like it): `CydiaSubstrate` anywhere in the name, a name ending in `libsubstrate.dylib`, or a last
 * path component that is `libsubstrate.dylib` or starts with `CydiaSubstrate`. Injected dylibs
 * that load one are pointed at the bundled substrate, and one among a mode's dylibs is bundled
 * without a load command of its own.
 */
export function isSubstrate(name: string): boolean {
  const lastComponent = name.replace(/\/+$/, '').split('/').pop() ?? '';
  return (
    /CydiaSubstrate|libsubstrate\.dylib$/.test(name) ||
    /^(libsubstrate\.dylib|CydiaSubstrate.*)$/.test(lastComponent)
  );
}

/**
 * DUP's renaming of identifiers: the app's id becomes `newAppId`, and every id under it keeps its
 * suffix (`<app>.share` becomes `<new>.share`), so extensions and watch apps stay under the app as
 * iOS requires. Other ids (a framework's own, `org.cocoapods.Kit`) are not the app's and stay.
 */
export function dupRenamer(appId: string, newAppId: string): (id: string) => string {
  return (id) =>
    id === appId ? newAppId : id.startsWith(`${appId}.`) ? `${newAppId}${id.slice(appId.length)}` : id;
}

/**
 * Mode 4: the app takes `newAppId` (the "bundle id prefix") and nested bundles follow (see
 * dupRenamer); an extension or watch app whose id is not under the app's moves under the new one.
 * Frameworks keep ids of their own: code finds its resources with Bundle(identifier:). Every
 * Info.plist string naming a renamed id (WKCompanionAppBundleIdentifier, WKAppBundleIdentifier,
 * NSExtension attributes) names the new one. Returns the rewritten plists and the renaming.
 */
export function applyDup(
  plan: SigningPlan,
  newAppId: string,
  read: (name: string) => Buffer,
): { plists: Map<string, Buffer>; renameId: (id: string) => string } {
  const appId = plan.app.bundleId;
  if (newAppId === appId) {
    throw new IpaError(
      'BUNDLE_ID_INVALID',
      `Mode 4 (DUP) needs a bundle id other than the app's own, found '${newAppId}'.`,
    );
  }
  const underApp = dupRenamer(appId, newAppId);
  const renamed = new Map(
    plan.inOrder.map((b) => {
      const moved = underApp(b.bundleId);
      return [
        b.bundleId,
        moved !== b.bundleId || b.kind === 'framework' ? moved : `${newAppId}.${b.bundleId}`,
      ];
    }),
  );
  const renameId = (id: string) => renamed.get(id) ?? underApp(id);
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
  return { plists, renameId };
}

/**
 * Modes 1-3: copies the dylibs into the app's Frameworks, points their CydiaSubstrate dependency
 * at the bundled substrate when one is given, and adds a load command to the main executable.
 * Returns the new and changed files; the new dylibs are signed as the app's loose code.
 */
export function applyInjection(
  plan: SigningPlan,
  options: { readonly inject: readonly InjectedDylib[]; readonly substrate?: InjectedDylib | undefined },
  read: (name: string) => Buffer,
): Map<string, Buffer> {
  const app = plan.app;
  const files = new Map<string, Buffer>();
  const frameworks = `${app.dir}/Frameworks`;
  const substratePath = options.substrate
    ? `@executable_path/Frameworks/${options.substrate.name}`
    : undefined;
  let executable = read(app.executable!);
  for (const dylib of [...(options.substrate ? [options.substrate] : []), ...options.inject]) {
    const target = `${frameworks}/${dylib.name}`;
    let bytes = dylib.bytes;
    if (substratePath && dylib !== options.substrate) {
      bytes = rewriteDylibPath(bytes, dylib.name, isSubstrate, substratePath).bytes;
    }
    files.set(target, bytes);
    app.looseCode.push(target);
    if (dylib !== options.substrate) {
      executable = addDylibLoad(executable, posix.basename(app.executable!), {
        path: `@executable_path/Frameworks/${dylib.name}`,
        weak: dylib.weak ?? false,
      });
    }
  }
  files.set(app.executable!, executable);
  return files;
}
