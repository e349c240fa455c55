/**
 * What each sign mode does to an IPA: the dylib kinds it injects and whether it renames bundle ids.
 * Signing (src/sign-ipa) reads nothing else to know a mode. The service's table of the modes
 * (packages/contracts, src/sign-modes.ts) adds to each row here what people see of it.
 *
 * This file imports nothing, so a browser bundle can take it (the package's `./sign-modes` export)
 * without the rest of the toolkit.
 */

/** The operator's dylibs come in two kinds, each a list of files: in-app purchase and IGG tweaks. */
export type DylibKind = 'iap' | 'igg';

export interface SigningMode {
  /** The mode's number, as docs/product.md's sign types and the CLI's --mode give it. */
  readonly type: number;
  /** The kinds of dylibs it injects, in load order; none for modes that inject nothing. */
  readonly injects: readonly DylibKind[];
  /** DUP: the copy takes a bundle id of its own, so it installs beside the original. */
  readonly renamesBundleIds: boolean;
}

/** Indexed by the mode's number. */
export const SIGNING_MODES = [
  { type: 0, injects: [], renamesBundleIds: false },
  { type: 1, injects: ['iap'], renamesBundleIds: false },
  { type: 2, injects: ['igg'], renamesBundleIds: false },
  { type: 3, injects: ['iap', 'igg'], renamesBundleIds: false },
  { type: 4, injects: [], renamesBundleIds: true },
] as const satisfies readonly SigningMode[];

export type SignMode = (typeof SIGNING_MODES)[number]['type'];

/** The modes' numbers, in order. */
export const SIGN_MODE_NUMBERS: readonly SignMode[] = SIGNING_MODES.map((mode) => mode.type);

/** The mode of a number, or undefined when no mode has it. */
export const findSigningMode = (type: number): SigningMode | undefined =>
  Number.isInteger(type) ? SIGNING_MODES[type] : undefined;
