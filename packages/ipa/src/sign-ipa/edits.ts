/**
 * The first phase of a sign: the files the mode changes or adds, decided before anything is
 * written (what is copied as it is, and the output's budget, follow from them). It reads each
 * bundle's Info.plist and, when the mode injects, the main executable; nothing else.
 */
import { createGroupRemap } from '../sign/entitlements.js';
import type { ResolvedMode } from './mode-needs.js';
import { applyDup, applyInjection } from './modes.js';
import type { SigningPlan } from './plan.js';

/** Under DUP, how ids inside entitlements and app group names follow the app. */
export interface DupRenaming {
  renameId: (id: string) => string;
  remapGroup: (group: string) => string;
}

export interface ModeEdits {
  /**
   * New content of the files signing replaces or adds, by archive path: DUP's Info.plists, the
   * injected dylibs and the executable that loads them, each main bundle's profile. Signing takes
   * each out once it is written.
   */
  readonly replaced: Map<string, Buffer>;
  readonly dup?: DupRenaming;
}

/**
 * Applies the mode to the plan (DUP renames its bundles, injection adds loose code to the app) and
 * answers the files that changes. Every mode gives the app and its extensions the new profile.
 */
export async function planEdits(
  plan: SigningPlan,
  mode: ResolvedMode,
  profile: Buffer,
  read: (name: string) => Promise<Buffer>,
): Promise<ModeEdits> {
  const replaced = new Map<string, Buffer>();
  const injects = mode.inject.length > 0;
  // The modes edit plists and the main executable; fetch just those (one binary at most).
  const original = new Map<string, Buffer>();
  for (const bundle of plan.inOrder)
    original.set(`${bundle.dir}/Info.plist`, await read(`${bundle.dir}/Info.plist`));
  if (injects) original.set(plan.app.executable!, await read(plan.app.executable!));
  const current = (name: string) => replaced.get(name) ?? original.get(name)!;
  let dup: DupRenaming | undefined;
  if (mode.newAppId !== undefined) {
    const oldAppId = plan.app.bundleId;
    const { plists, renameId } = applyDup(plan, mode.newAppId(oldAppId), current);
    for (const [name, bytes] of plists) replaced.set(name, bytes);
    dup = { renameId, remapGroup: createGroupRemap(oldAppId, plan.app.bundleId) };
  }
  if (injects) for (const [name, bytes] of applyInjection(plan, mode, current)) replaced.set(name, bytes);
  for (const bundle of plan.inOrder) {
    if (bundle.isMain) replaced.set(`${bundle.dir}/embedded.mobileprovision`, profile);
  }
  return { replaced, ...(dup === undefined ? {} : { dup }) };
}
