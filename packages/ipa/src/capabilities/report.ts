/**
 * What a re-sign keeps of each component's capabilities, before anything is signed: for the
 * components an app came with (components.ts), a profile and a mode's renaming, per component and
 * per capability, kept, changed (moved to the profile's team, renamed for a DUP copy) or lost, with
 * a sentence for each change or loss. Pure: it computes the entitlements with the very function the
 * signer writes them with (sign/entitlements.ts, mergeEntitlements), so it cannot tell another story
 * than the signature will.
 */
import type { PlistObject, PlistValue } from '../plist.js';
import { createGroupRemap, isAllowedBy, mergeEntitlements } from '../sign/entitlements.js';
import { dupRenamer } from '../sign-ipa/modes.js';
import { CAPABILITIES, capabilityOf, componentLabel, IDENTITY_KEYS, type Capability } from './catalog.js';
import type { ComponentKind, EntitlementValue, Entitlements, SignedComponent } from './components.js';

/** What of a profile the report reads: its team, its App ID and what it grants. */
export interface ReportProfile {
  readonly teamId: string;
  /** 'TEAM.*' for a wildcard App ID, 'TEAM.com.example.app' for an explicit one. */
  readonly applicationIdentifier: string;
  readonly entitlements: PlistObject;
}

export interface CapabilityReportInput {
  readonly components: readonly SignedComponent[];
  readonly profile: ReportProfile;
  /** DUP: the copy's bundle id; absent for the modes that keep the app's ids. */
  readonly newAppId?: string;
}

export type CapabilityStatus = 'kept' | 'changed' | 'lost';

export interface CapabilityOutcome {
  readonly id: string;
  readonly name: string;
  readonly status: CapabilityStatus;
  /** For a lost or changed capability, what the person notices; null when kept. */
  readonly sentence: string | null;
  /** For a lost capability Apple grants only to an explicit App ID: what the operator could do. */
  readonly operator: string | null;
}

export interface ComponentReport {
  readonly path: string;
  readonly kind: ComponentKind;
  readonly name: string;
  readonly bundleId: string;
  /** The bundle id it is signed as (another under DUP). */
  readonly signedAs: string;
  /** `unsignable`: the profile's App ID does not cover it, so iOS refuses it (and the app with it). */
  readonly outcome: 'signed' | 'unsignable';
  /** Why it will not install or not work where it should, when it will not. */
  readonly note: string | null;
  readonly capabilities: readonly CapabilityOutcome[];
}

export interface CapabilityReport {
  readonly teamId: string;
  /** The app's bundle id once signed. */
  readonly signedAs: string;
  readonly components: readonly ComponentReport[];
  /** Capabilities lost and changed, counted once per capability and component. */
  readonly lost: number;
  readonly changed: number;
  /** One line for the version modal: what is lost, or that everything is kept. */
  readonly summary: string;
}

const MAIN_KINDS: ReadonlySet<ComponentKind> = new Set(['app', 'app-extension', 'watch-app', 'app-clip']);
const RANK: Record<CapabilityStatus, number> = { kept: 0, changed: 1, lost: 2 };

export function capabilityReport(input: CapabilityReportInput): CapabilityReport {
  const { components, profile } = input;
  const app = components.find((c) => c.path === '') ?? components[0];
  const appId = app?.bundleId ?? '';
  const rename = input.newAppId === undefined ? undefined : dupRenaming(components, appId, input.newAppId);
  const remapGroup = input.newAppId === undefined ? undefined : createGroupRemap(appId, input.newAppId);
  const reports = components.map((component) => {
    const signedAs = rename?.(component.bundleId) ?? component.bundleId;
    const isMain = MAIN_KINDS.has(component.kind);
    const own = component.entitlements ?? {};
    // Frameworks and plain bundles are signed without entitlements (AMFI refuses them on such code).
    const written: PlistObject = isMain
      ? mergeEntitlements({
          profile,
          bundleId: signedAs,
          own: own as PlistObject,
          ...(rename === undefined ? {} : { remapId: rename }),
          ...(remapGroup === undefined ? {} : { remapGroup }),
        })
      : {};
    const label = componentLabel(component);
    const unsignable = isMain && !isAllowedBy(profile.applicationIdentifier, `${profile.teamId}.${signedAs}`);
    return {
      path: component.path,
      kind: component.kind,
      name: component.name,
      bundleId: component.bundleId,
      signedAs,
      outcome: unsignable ? ('unsignable' as const) : ('signed' as const),
      note: unsignable
        ? `${label} cannot be signed: the profile is for ${profile.applicationIdentifier} only, so iOS refuses to install the app.`
        : component.kind === 'watch-app'
          ? `${label} is signed, but the profile lists only registered iPhones and iPads, so it will not install on a watch.`
          : null,
      capabilities: outcomesOf(own, written, label, profile.teamId, input.newAppId !== undefined),
    };
  });
  const all = reports.flatMap((r) => r.capabilities);
  const lost = all.filter((c) => c.status === 'lost').length;
  const changed = all.filter((c) => c.status === 'changed').length;
  return {
    teamId: profile.teamId,
    signedAs: rename?.(appId) ?? appId,
    components: reports,
    lost,
    changed,
    summary: summaryOf(reports),
  };
}

/** DUP's renaming as applyDup (sign-ipa/modes.ts) does it: ids under the app follow it, others move under it. */
function dupRenaming(components: readonly SignedComponent[], appId: string, newAppId: string) {
  const underApp = dupRenamer(appId, newAppId);
  const renamed = new Map(
    components.map((c) => {
      const moved = underApp(c.bundleId);
      return [
        c.bundleId,
        moved !== c.bundleId || c.kind === 'framework' ? moved : `${newAppId}.${c.bundleId}`,
      ];
    }),
  );
  return (id: string) => renamed.get(id) ?? underApp(id);
}

function outcomesOf(
  own: Entitlements,
  written: PlistObject,
  label: string,
  teamId: string,
  isCopy: boolean,
): CapabilityOutcome[] {
  const byCapability = new Map<Capability, CapabilityStatus>();
  for (const [key, value] of Object.entries(own)) {
    if (IDENTITY_KEYS.has(key)) continue;
    const capability = capabilityOf(key);
    const status = statusOf(value, written[key]);
    const before = byCapability.get(capability);
    if (before === undefined || RANK[status] > RANK[before]) byCapability.set(capability, status);
  }
  // In the catalogue's order, the capabilities people notice most first; keys it does not name last.
  const rank = (c: Capability) => (CAPABILITIES.includes(c) ? CAPABILITIES.indexOf(c) : CAPABILITIES.length);
  return [...byCapability]
    .sort(([a], [b]) => rank(a) - rank(b))
    .map(([capability, status]) => ({
      id: capability.id,
      name: capability.name,
      status,
      sentence:
        status === 'lost'
          ? capability.lost(label)
          : status === 'changed'
            ? changedSentence(capability, label, teamId, isCopy)
            : null,
      operator: status === 'lost' ? operatorHint(capability) : null,
    }));
}

/** Lost when the signature will not carry it, or carries fewer of its values; changed when it carries others. */
function statusOf(own: EntitlementValue, written: PlistValue | undefined): CapabilityStatus {
  if (written === undefined) return 'lost';
  if (Array.isArray(own) && Array.isArray(written) && written.length < own.length) return 'lost';
  return JSON.stringify(own) === JSON.stringify(written) ? 'kept' : 'changed';
}

function changedSentence(capability: Capability, label: string, teamId: string, isCopy: boolean): string {
  if (capability.id === 'keychain-sharing')
    return `${label}'s saved logins belong to this server's team (${teamId}) from now on: those saved under another team's signature are not read back.`;
  if (capability.id === 'app-groups' && isCopy)
    return "The copy's app groups are renamed for it: it does not share data with the original app.";
  return `${capability.name} is signed with this server's values for ${label.replace(/^The /, 'the ')}.`;
}

function operatorHint(capability: Capability): string | null {
  if (!capability.explicitOnly) return null;
  const enable =
    capability.ascCapability === undefined
      ? `Apple grants ${capability.name} only to an explicit App ID.`
      : `Apple grants ${capability.name} only to an explicit App ID with ${capability.ascCapability} enabled, which App Store Connect's API can create.`;
  return capability.ascCannotCreate === undefined
    ? enable
    : `${enable} It cannot create ${capability.ascCannotCreate}: the operator makes those on Apple's developer website.`;
}

function summaryOf(reports: readonly ComponentReport[]): string {
  const unsignable = reports.filter((r) => r.outcome === 'unsignable');
  const lostNames = unique(
    reports.flatMap((r) => r.capabilities.filter((c) => c.status === 'lost').map(inSentence)),
  );
  const changed = reports.some((r) => r.capabilities.some((c) => c.status === 'changed'));
  const parts: string[] = [];
  if (unsignable.length > 0)
    parts.push(
      `${unsignable.length === 1 ? 'A part' : `${unsignable.length} parts`} of it cannot be signed.`,
    );
  // A line, not a list: the first few by name, the rest counted (the detail names each).
  if (lostNames.length > 0)
    parts.push(
      lostNames.length <= SUMMARY_NAMES + 1
        ? `Loses ${listOf(lostNames)}.`
        : `Loses ${lostNames.slice(0, SUMMARY_NAMES).join(', ')} and ${lostNames.length - SUMMARY_NAMES} more capabilities.`,
    );
  if (parts.length === 0)
    parts.push(
      changed ? 'Keeps its capabilities, some moved to this server.' : 'Keeps all its capabilities.',
    );
  return parts.join(' ');
}

/** Capabilities the summary names before it counts the rest. */
const SUMMARY_NAMES = 3;

const unique = (values: string[]) => [...new Set(values)];
/** Capabilities whose names are common nouns, written lower-case inside a sentence. */
const COMMON_NOUNS: ReadonlySet<string> = new Set([
  'push',
  'app-groups',
  'associated-domains',
  'keychain-sharing',
  'data-protection',
  'network-extensions',
  'hotspot',
  'multipath',
  'wireless-accessory',
]);
const inSentence = (c: Pick<CapabilityOutcome, 'id' | 'name'>) =>
  COMMON_NOUNS.has(c.id) ? c.name[0]!.toLowerCase() + c.name.slice(1) : c.name;

function listOf(names: string[]): string {
  return names.length <= 1 ? (names[0] ?? '') : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`;
}

/**
 * What an ad-hoc profile for a wildcard App ID grants, as this server's identities make them (the
 * dev identity's and App Store Connect's alike): the team's keychain groups and nothing else.
 */
export function wildcardProfile(teamId: string): ReportProfile {
  return {
    teamId,
    applicationIdentifier: `${teamId}.*`,
    entitlements: {
      'application-identifier': `${teamId}.*`,
      'keychain-access-groups': [`${teamId}.*`],
      'get-task-allow': false,
      'com.apple.developer.team-identifier': teamId,
    },
  };
}

/** What Apple enables on every new explicit App ID (the capabilities a bundle id made through the API lists at once). */
export const APPLE_DEFAULT_CAPABILITIES: readonly string[] = ['GAME_CENTER', 'IN_APP_PURCHASE'];

/**
 * Whether one explicit App ID can sign the whole app: it names one bundle id, and a profile is for
 * one App ID, so an app with extensions, a watch app or an App Clip needs the wildcard's.
 */
export function fitsOneAppId(components: readonly SignedComponent[]): boolean {
  return components.filter((c) => MAIN_KINDS.has(c.kind)).length === 1;
}

/**
 * The App Store Connect capability types to enable on an explicit App ID for the app's own claims:
 * those the API enables with nothing else to make. App groups, iCloud and Apple Pay are left out:
 * their identifiers (group.…, iCloud.…, merchant.…) cannot be created through the API.
 */
export function creatableCapabilities(components: readonly SignedComponent[]): string[] {
  const app = components.find((c) => c.path === '') ?? components[0];
  const types = Object.keys(app?.entitlements ?? {})
    .filter((key) => !IDENTITY_KEYS.has(key))
    .map(capabilityOf)
    .filter((c) => c.explicitOnly && c.ascCapability !== undefined && c.ascCannotCreate === undefined)
    .map((c) => c.ascCapability!);
  return [...new Set(types)].sort();
}

/**
 * What an ad-hoc profile for an explicit App ID grants, with these App Store Connect capability
 * types enabled besides Apple's defaults: the wildcard's keys for this bundle id, plus each
 * capability's entitlements (catalog.ts, `granted`).
 */
export function explicitAppIdProfile(
  teamId: string,
  bundleId: string,
  capabilityTypes: readonly string[],
): ReportProfile {
  const base = wildcardProfile(teamId);
  const entitlements: PlistObject = {
    ...base.entitlements,
    'application-identifier': `${teamId}.${bundleId}`,
  };
  const enabled = new Set([...APPLE_DEFAULT_CAPABILITIES, ...capabilityTypes]);
  for (const capability of CAPABILITIES)
    if (capability.ascCapability !== undefined && enabled.has(capability.ascCapability))
      Object.assign(entitlements, capability.granted?.(teamId) ?? {});
  return { teamId, applicationIdentifier: `${teamId}.${bundleId}`, entitlements };
}
