/**
 * Modes 1 (IAP), 2 (IGG) and 3 (IAP+IGG) inject operator-supplied dylibs: each is copied into the
 * app's Frameworks folder and loaded by the main executable from there. A CydiaSubstrate
 * dependency of an injected dylib is pointed at the bundled substrate when one is supplied.
 */
import { IpaError } from '../errors.js';
import { addDylibLoad, isMachOHead, rewriteDylibPath, type DylibLoad } from '../macho/index.js';

export type SignMode = 0 | 1 | 2 | 3 | 4;

export interface InjectedDylib {
  /** File name inside Frameworks/, e.g. 'libiap.dylib'. */
  readonly fileName: string;
  readonly bytes: Buffer;
  /** Load weakly, so the app still starts when iOS refuses the dylib. */
  readonly weak?: boolean;
}

export interface ModeDylibs {
  readonly iap?: InjectedDylib;
  readonly igg?: InjectedDylib;
  /** A substrate the tweaks link against, bundled beside them. */
  readonly substrate?: InjectedDylib;
}

export interface InjectionPlan {
  /** Files to add, relative to the app bundle. */
  readonly files: readonly { path: string; bytes: Buffer }[];
  /** Load commands to add to the app's main executable. */
  readonly loads: readonly DylibLoad[];
}

const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._+-]*\.dylib$/;
const SUBSTRATE_NAMES = /CydiaSubstrate|libsubstrate\.dylib|libsubstitute\.dylib|libellekit\.dylib/;

export function assertMode(mode: number): asserts mode is SignMode {
  if (!Number.isInteger(mode) || mode < 0 || mode > 4) {
    throw new IpaError('MODE_INVALID', `Expected a signing mode from 0 to 4 (0 normal, 1 IAP, 2 IGG, 3 IAP+IGG, 4 DUP), found ${mode}.`);
  }
}

/** The dylibs a mode injects; mode 0 and 4 inject none. */
export function planInjection(mode: SignMode, dylibs: ModeDylibs = {}): InjectionPlan {
  const wanted: ('iap' | 'igg')[] = mode === 1 ? ['iap'] : mode === 2 ? ['igg'] : mode === 3 ? ['iap', 'igg'] : [];
  if (wanted.length === 0) return { files: [], loads: [] };
  const substrate = dylibs.substrate === undefined ? undefined : checked(dylibs.substrate, 'substrate');
  const files: { path: string; bytes: Buffer }[] = [];
  const loads: DylibLoad[] = [];
  for (const kind of wanted) {
    const dylib = dylibs[kind];
    if (dylib === undefined) {
      throw new IpaError('DYLIB_MISSING', `Expected the ${kind.toUpperCase()} dylib for mode ${mode}, found none configured.`);
    }
    let bytes = checked(dylib, kind).bytes;
    if (substrate !== undefined) {
      bytes = rewriteDylibPath(bytes, dylib.fileName, (name) => SUBSTRATE_NAMES.test(name), `@executable_path/Frameworks/${substrate.fileName}`).bytes;
    }
    files.push({ path: `Frameworks/${dylib.fileName}`, bytes });
    loads.push({ path: `@executable_path/Frameworks/${dylib.fileName}`, ...(dylib.weak ? { weak: true } : {}) });
  }
  if (substrate !== undefined) files.push({ path: `Frameworks/${substrate.fileName}`, bytes: substrate.bytes });
  const names = files.map((f) => f.path);
  const duplicate = names.find((name, i) => names.indexOf(name) !== i);
  if (duplicate !== undefined) throw new IpaError('DYLIB_MISSING', `Expected distinct file names for the injected dylibs, found ${duplicate} twice.`);
  return { files, loads };
}

/** The main executable with the plan's load commands added (every slice). */
export function injectLoads(executable: Buffer, where: string, plan: InjectionPlan): Buffer {
  return plan.loads.reduce((bytes, load) => addDylibLoad(bytes, where, load), executable);
}

function checked(dylib: InjectedDylib, kind: string): InjectedDylib {
  if (!FILE_NAME.test(dylib.fileName)) {
    throw new IpaError('DYLIB_MISSING', `Expected the ${kind} dylib's file name to be a plain name ending in .dylib, found "${dylib.fileName}".`);
  }
  if (!isMachOHead(dylib.bytes)) {
    throw new IpaError('MACHO_BAD_MAGIC', `Expected the ${kind} dylib ${dylib.fileName} to be a Mach-O file, found bytes 0x${dylib.bytes.subarray(0, 4).toString('hex')}.`);
  }
  return dylib;
}
