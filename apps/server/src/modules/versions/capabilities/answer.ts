/**
 * A version's capability report for one viewer, as GET /api/version/... answers it: the modes that
 * keep the app's ids sign its entitlements alike and share one report; DUP has its own, under the
 * copy's id. The team is the one that would sign for the viewer (the profile this server's
 * identities make is for a wildcard App ID, packages/ipa wildcardProfile).
 */
import {
  SIGN_MODES,
  type ModeCapabilities,
  type SignType,
  type VersionCapabilities,
} from '@sideport/contracts';
import {
  capabilityReport,
  explicitAppIdProfile,
  wildcardProfile,
  type CapabilityReport,
  type SignedComponent,
} from '@sideport/ipa';

import { copyAppIdOf } from './copy-app-ids.js';

/** Stands for the team in the entitlements computed before the viewer has one (only its keychain groups name it). */
const UNKNOWN_TEAM = 'TEAMID';

export function capabilitiesAnswer(input: {
  components: readonly SignedComponent[];
  teamId: string | null;
  /** DUP's new bundle id segment for this viewer and app (modules/sign/worker.ts, dupSuffix). */
  dupSuffix: string;
  /** The viewer's devices moved to another team since their last install (identity/pool/team-moves.ts). */
  teamMoved?: boolean;
  /** DUP copies are signed for explicit App IDs made through App Store Connect (copy-app-ids.ts). */
  copyAppIds?: boolean;
}): VersionCapabilities {
  const { components, teamId } = input;
  const profile = wildcardProfile(teamId ?? UNKNOWN_TEAM);
  const appId = components.find((c) => c.path === '')?.bundleId ?? '';
  const keeping = SIGN_MODES.filter((m) => !m.renamesBundleIds).map((m) => m.type);
  const renaming = SIGN_MODES.filter((m) => m.renamesBundleIds).map((m) => m.type);
  const modes: ModeCapabilities[] = [
    modeAnswer(keeping, capabilityReport({ components, profile }), input.teamMoved ? REPLACES : null),
  ];
  if (renaming.length > 0) {
    const newAppId = `${appId}.${input.dupSuffix}`;
    // The copy's own App ID, when the operator has them made and one App ID signs the whole app.
    const copy = input.copyAppIds ? copyAppIdOf(components, input.dupSuffix) : undefined;
    const copyProfile = copy
      ? explicitAppIdProfile(profile.teamId, copy.identifier, copy.capabilityTypes)
      : profile;
    modes.push(
      modeAnswer(renaming, capabilityReport({ components, profile: copyProfile, newAppId }), BESIDE),
    );
  }
  return { team_id: teamId, modes };
}

/** A copy under its own bundle id is another app to iOS: its own data, nothing replaced. */
const BESIDE = 'Installs beside the original app, as another app with data of its own.';
/** The same bundle id from another team: iOS replaces the app, and its keychain and app groups are the old team's. */
const REPLACES =
  'Replaces the copy your previous team signed: the app will ask you to sign in again, and what it shared with its extensions stays behind.';

function modeAnswer(
  types: SignType[],
  report: CapabilityReport,
  installNote: string | null,
): ModeCapabilities {
  return {
    sign_types: types,
    summary: report.summary,
    lost: report.lost,
    changed: report.changed,
    bundle_id: report.signedAs,
    install_note: installNote,
    components: report.components.map((c) => ({
      path: c.path,
      kind: c.kind,
      name: c.name,
      bundle_id: c.bundleId,
      signed_as: c.signedAs,
      outcome: c.outcome,
      note: c.note,
      capabilities: c.capabilities.map((o) => ({ ...o })),
    })),
  };
}
