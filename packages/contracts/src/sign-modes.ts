/**
 * The sign modes (docs/product.md, Entities and fields; docs/sign-service.md, Modes), once: for
 * each, its number, its names, the version entry's status field, the confirmation label, the line
 * the web app explains it with, and what signing does with it. The server, the web app and
 * packages/ipa read a mode's meaning here and nowhere else.
 *
 * What signing does with a mode (the dylib kinds it injects, whether it renames bundle ids) is
 * packages/ipa's own table (`@sideport/ipa/sign-modes`), spread into each row below. packages/ipa
 * must not depend on this package: it knows nothing of the service (no status fields, no web
 * sentences) and can be published alone, and its `sign()` and `sideport-ipa sign --mode` need
 * those facts themselves. So the dependency points this way; that module imports nothing, so the
 * web app's bundle takes it without the rest of the toolkit.
 */
// zod/mini: see catalog.ts.
import * as z from 'zod/mini';
import { SIGNING_MODES, type SigningMode } from '@sideport/ipa/sign-modes';

export const signStatus = z.enum(['No', 'Pending', 'Process', 'Done']);
export type SignStatus = z.infer<typeof signStatus>;

/** Indexed by the mode's number. */
const MODES = [
  {
    ...SIGNING_MODES[0],
    apiName: 'normal',
    name: 'Normal',
    statusField: 'normal_sign',
    explanation: 'The app as decrypted, signed for your registered devices.',
  },
  {
    ...SIGNING_MODES[1],
    apiName: 'IAP',
    name: 'IAP',
    statusField: 'iap_sign',
    confirmLabel: 'IAP',
    explanation: "Adds the operator's in-app purchase tweak (their IAP dylibs) to the app.",
    notOffered: 'Not offered on this server: it has no IAP dylibs.',
  },
  {
    ...SIGNING_MODES[2],
    apiName: 'IGG',
    name: 'IGG',
    statusField: 'igg_sign',
    confirmLabel: 'IGG',
    explanation: "Adds the operator's IGG tweak, a game memory tool (their IGG dylibs), to the app.",
    notOffered: 'Not offered on this server: it has no IGG dylibs.',
  },
  {
    ...SIGNING_MODES[3],
    apiName: 'IAP+IGG',
    name: 'IAP+IGG',
    statusField: 'both_sign',
    confirmLabel: 'IAP + IGG',
    explanation: 'Adds both the IAP and the IGG tweaks.',
    notOffered: 'Not offered on this server: it needs both the IAP and the IGG dylibs.',
  },
  {
    ...SIGNING_MODES[4],
    apiName: 'DUP',
    name: 'DUP',
    statusField: 'dup_sign',
    confirmLabel: 'DUP',
    explanation:
      'A copy under its own bundle id: it installs beside the original app instead of replacing it.',
  },
] as const;

/** A sign type: the number PUT /api/sign takes and the routes' `{type}` name. */
export type SignType = (typeof MODES)[number]['type'];
/** The version entry's field that holds the caller's status of a mode. */
export type SignStatusField = (typeof MODES)[number]['statusField'];

export interface SignModeInfo extends SigningMode {
  readonly type: SignType;
  /** As the API's sentences and docs/product.md's sign types name it ('0 normal, 1 IAP, ...'). */
  readonly apiName: string;
  /** As the web app shows it: the label of its group of buttons. */
  readonly name: string;
  readonly statusField: SignStatusField;
  /**
   * In parentheses in the sign confirmation ('Really want request sign (IAP + IGG) ...'), and in
   * the server's refusal of a mode it does not offer; normal names none.
   */
  readonly confirmLabel?: string;
  /** What the mode does to the app, in a line under its buttons. */
  readonly explanation: string;
  /** Why a server may not offer it (the modes that inject the operator's dylibs). */
  readonly notOffered?: string;
}

export const SIGN_MODES: readonly SignModeInfo[] = MODES;

export const signModeOf = (type: SignType): SignModeInfo => MODES[type];

/** The sign types, in order. */
export const SIGN_TYPES: readonly SignType[] = MODES.map((mode) => mode.type);

export const signType = z.union(SIGN_TYPES.map((type) => z.literal(type)));

/** '0 normal, 1 IAP, 2 IGG, 3 IAP+IGG or 4 DUP': the types and their names, for sentences. */
export const SIGN_TYPE_NAMES = MODES.map((mode) => `${mode.type} ${mode.apiName}`)
  .join(', ')
  .replace(/, ([^,]+)$/, ' or $1');

/** The version entry's sign status fields, one per mode, in the modes' order. */
export const signStatusFields = Object.fromEntries(MODES.map((mode) => [mode.statusField, signStatus])) as {
  [F in SignStatusField]: typeof signStatus;
};

export type SignStatuses = Record<SignStatusField, SignStatus>;

/** Every mode unasked: what a version shows before its viewer asks for any sign of it. */
export const NO_SIGN_STATUSES: SignStatuses = Object.freeze(
  Object.fromEntries(MODES.map((mode) => [mode.statusField, 'No'])) as SignStatuses,
);
