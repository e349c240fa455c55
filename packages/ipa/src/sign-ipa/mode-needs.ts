/**
 * A sign mode and what it needs, settled once per sign before anything is read or written: the
 * one place signing reads the mode table (src/sign-modes.ts), and the one place it refuses a mode
 * for what it lacks (MODE_INVALID, DYLIB_MISSING, BUNDLE_ID_INVALID). sign() and signIpa() resolve
 * the mode first; the phases after them take the resolved mode and look nothing up.
 */
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { IpaError } from '../errors.js';
import {
  findSigningMode,
  SIGN_MODE_NUMBERS,
  SIGNING_MODES,
  type DylibKind,
  type SigningMode,
  type SignMode,
} from '../sign-modes.js';
import { isSubstrate, type InjectedDylib } from './modes.js';

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

/** A mode as signIpa's callers ask for it: its number, the dylibs already picked, DUP's new id. */
export interface ModeOptions {
  mode?: SignMode;
  inject?: readonly InjectedDylib[];
  /** Bundled CydiaSubstrate replacement: injected dylibs that depend on CydiaSubstrate load it instead. */
  substrate?: InjectedDylib;
  /** Mode 4: the copy's bundle id; ids under the app's take it as their new prefix, so the copy installs beside the original. */
  bundleIdPrefix?: string;
  /**
   * Mode 4 without bundleIdPrefix: the copy's bundle id is the app's own followed by `.<suffix>`
   * (a service's per-person segment), so nobody reads the app's id before signing does.
   */
  bundleIdSuffix?: string;
}

/** A mode with what it needs in hand: what the phases of signing act on. */
export interface ResolvedMode {
  readonly type: SignMode;
  /** The dylibs injected with a load command, in load order; none for modes that inject nothing. */
  readonly inject: readonly InjectedDylib[];
  /** The CydiaSubstrate bundled beside them, without a load command of its own. */
  readonly substrate?: InjectedDylib;
  /** DUP: the copy's bundle id from the app's own (BUNDLE_ID_INVALID when it is not one); none when the mode keeps ids. */
  readonly newAppId?: (appId: string) => string;
}

const SAFE_NAME = /^[A-Za-z0-9._+-]+\.dylib$/;
const BUNDLE_ID = /^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*$/;
/** '1, 2 or 3': the modes that inject dylibs. */
const INJECTING_MODES = SIGNING_MODES.filter((m) => m.injects.length > 0)
  .map((m) => m.type)
  .join(', ')
  .replace(/, (\d+)$/, ' or $1');

/** The mode of a number, or MODE_INVALID naming the modes there are. */
function signingModeOf(mode: number): SigningMode {
  const found = findSigningMode(mode);
  if (found === undefined)
    throw new IpaError(
      'MODE_INVALID',
      `Expected a sign mode from ${SIGN_MODE_NUMBERS[0]} to ${SIGN_MODE_NUMBERS.at(-1)}, found ${mode}.`,
    );
  return found;
}

/** What a caller gave a mode, by name (nothing is read before the mode is accepted). */
interface Asked {
  /** The first kind of dylib the mode injects that the operator has none of. */
  readonly missingKind?: DylibKind;
  /** The dylibs to inject with a load command; without them only the kinds are checked (dylibsForMode). */
  readonly inject?: readonly string[];
  readonly substrate?: string;
  readonly bundleIdPrefix?: string;
  readonly bundleIdSuffix?: string;
}

/**
 * Every refusal of a mode for what it lacks: a kind of dylib it injects that is not configured,
 * no dylib to inject, dylibs for a mode that injects none, a dylib name that is not a plain file
 * name, DUP without a usable new bundle id.
 */
function refuseUnmet(mode: SigningMode, asked: Asked): void {
  const { type, injects, renamesBundleIds } = mode;
  if (asked.missingKind !== undefined) {
    throw new IpaError(
      'DYLIB_MISSING',
      `Expected the ${asked.missingKind.toUpperCase()} dylib for mode ${type}, found none configured.`,
    );
  }
  // dylibsForMode asks about the kinds alone.
  if (asked.inject === undefined) return;
  const names = [...asked.inject, ...(asked.substrate === undefined ? [] : [asked.substrate])];
  if (injects.length > 0 && asked.inject.length === 0) {
    throw new IpaError('DYLIB_MISSING', `Mode ${type} injects the operator's dylibs, but none was given.`);
  }
  if (injects.length === 0 && names.length > 0) {
    throw new IpaError(
      'MODE_INVALID',
      `Mode ${type} injects nothing, found ${names.length} dylib(s) to inject: choose mode ${INJECTING_MODES}, or leave them out.`,
    );
  }
  for (const name of names) {
    if (!SAFE_NAME.test(name))
      throw new IpaError('DYLIB_MISSING', `Expected a plain .dylib file name to inject, found '${name}'.`);
  }
  // A suffix is checked with the app's id it follows, once signing has read it (newAppIdOf).
  if (renamesBundleIds && (asked.bundleIdPrefix !== undefined || asked.bundleIdSuffix === undefined))
    assertBundleId(asked.bundleIdPrefix);
}

function assertBundleId(id: string | undefined): asserts id is string {
  if (!(id && BUNDLE_ID.test(id))) {
    throw new IpaError(
      'BUNDLE_ID_INVALID',
      `Mode 4 (DUP) needs a new bundle id of letters, digits, '-' and '.', found '${id ?? ''}'.`,
    );
  }
}

/** DUP's new bundle id, from the app's own: the prefix given, or the app's id and the suffix. */
function newAppIdOf(mode: SigningMode, options: ModeOptions): ResolvedMode['newAppId'] {
  if (!mode.renamesBundleIds) return undefined;
  const { bundleIdPrefix: prefix, bundleIdSuffix: suffix } = options;
  return (appId) => {
    const id = prefix ?? `${appId}.${suffix}`;
    assertBundleId(id);
    return id;
  };
}

const sourcesOf = <T>(kind: T | readonly T[] | undefined): readonly T[] =>
  kind === undefined ? [] : Array.isArray(kind) ? kind : [kind as T];

const nameOf = (source: DylibSource) => (typeof source === 'string' ? basename(source) : source.name);

const load = async (source: DylibSource): Promise<InjectedDylib> =>
  typeof source === 'string' ? { name: basename(source), bytes: await readFile(source) } : source;

/** The dylibs a mode picks from the operator's, in load order, each once, and the first kind it lacks. */
function pickByKind<T extends DylibSource>(
  mode: SigningMode,
  dylibs: { readonly [K in DylibKind]?: T | readonly T[] },
): { picked: T[]; missingKind?: DylibKind } {
  const missingKind = mode.injects.find((kind) => sourcesOf(dylibs[kind]).length === 0);
  const picked = mode.injects.flatMap((kind) => sourcesOf(dylibs[kind]));
  return { picked: [...new Set(picked)], ...(missingKind === undefined ? {} : { missingKind }) };
}

/**
 * The dylibs a mode injects, in load order, each once (IAP before IGG); refuses a mode whose
 * dylibs are not configured, naming the kind.
 */
export function dylibsForMode<T extends DylibSource>(
  mode: SignMode,
  dylibs: { readonly [K in DylibKind]?: T | readonly T[] } = {},
): T[] {
  const found = signingModeOf(mode);
  const { picked, missingKind } = pickByKind(found, dylibs);
  refuseUnmet(found, missingKind === undefined ? {} : { missingKind });
  return picked;
}

/** signIpa's mode: its dylibs given as they are injected. */
export function resolveMode(options: ModeOptions): ResolvedMode {
  const type = options.mode ?? 0;
  const mode = signingModeOf(type);
  refuseUnmet(mode, {
    inject: (options.inject ?? []).map((dylib) => dylib.name),
    ...(options.substrate === undefined ? {} : { substrate: options.substrate.name }),
    ...bundleIdOptions(options),
  });
  const newAppId = newAppIdOf(mode, options);
  return {
    type,
    inject: options.inject ?? [],
    ...(options.substrate === undefined ? {} : { substrate: options.substrate }),
    ...(newAppId === undefined ? {} : { newAppId }),
  };
}

/**
 * sign()'s mode: it picks its dylibs from the operator's of each kind, and the substrate among
 * them (the one given, or the first that isSubstrate names; none when nothing is injected). The
 * files are read once the mode is accepted.
 */
export async function resolveModeFromKinds(
  options: Omit<ModeOptions, 'inject' | 'substrate'> & { dylibs?: ModeDylibs },
): Promise<ResolvedMode> {
  const type = options.mode ?? 0;
  const mode = signingModeOf(type);
  const { picked, missingKind } = pickByKind(mode, options.dylibs ?? {});
  const inject = picked.filter((source) => !isSubstrate(nameOf(source)));
  const found = options.dylibs?.substrate ?? picked.find((source) => isSubstrate(nameOf(source)));
  const substrate = found !== undefined && inject.length > 0 ? found : undefined;
  refuseUnmet(mode, {
    ...(missingKind === undefined ? {} : { missingKind }),
    inject: inject.map(nameOf),
    ...(substrate === undefined ? {} : { substrate: nameOf(substrate) }),
    ...bundleIdOptions(options),
  });
  const newAppId = newAppIdOf(mode, options);
  return {
    type,
    inject: await Promise.all(inject.map(load)),
    ...(substrate === undefined ? {} : { substrate: await load(substrate) }),
    ...(newAppId === undefined ? {} : { newAppId }),
  };
}

const bundleIdOptions = (options: ModeOptions) => ({
  ...(options.bundleIdPrefix === undefined ? {} : { bundleIdPrefix: options.bundleIdPrefix }),
  ...(options.bundleIdSuffix === undefined ? {} : { bundleIdSuffix: options.bundleIdSuffix }),
});
