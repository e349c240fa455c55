// zod/mini, as catalog.ts: the version entry carries these, and the web app's first screen parses it.
import * as z from 'zod/mini';
import { signType } from './sign-modes.js';

/**
 * What a re-sign keeps of an app's capabilities (packages/ipa, src/capabilities/report.ts), in the
 * version entry of GET /api/version/...: per group of modes that sign alike, per component, per
 * capability, kept, changed or lost, with the sentence a person reads.
 */
export const capabilityOutcome = z.object({
  /** 'push', 'app-groups', 'icloud', ... or the entitlement key of one Sideport does not name. */
  id: z.string(),
  name: z.string(),
  status: z.enum(['kept', 'changed', 'lost']),
  /** What the person notices, for a lost or changed capability; null when kept. */
  sentence: z.nullable(z.string()),
  /** For a lost capability Apple grants only to explicit App IDs: what the operator could do. */
  operator: z.nullable(z.string()),
});
export type CapabilityOutcome = z.infer<typeof capabilityOutcome>;

export const componentCapabilities = z.object({
  /** The bundle's folder inside the app: '' for the app, 'PlugIns/Share.appex'. */
  path: z.string(),
  /** 'app', 'app-extension', 'watch-app', 'app-clip', 'framework' or 'bundle'. */
  kind: z.string(),
  name: z.string(),
  bundle_id: z.string(),
  /** The bundle id it is signed as (the copy's under DUP). */
  signed_as: z.string(),
  /** 'unsignable': the profile does not cover it, and iOS refuses the app with it. */
  outcome: z.enum(['signed', 'unsignable']),
  note: z.nullable(z.string()),
  capabilities: z.array(capabilityOutcome),
});
export type ComponentCapabilities = z.infer<typeof componentCapabilities>;

export const modeCapabilities = z.object({
  /** The modes this holds for: those that keep the app's ids sign its entitlements alike. */
  sign_types: z.array(signType),
  /** One line: what is lost, or that everything is kept. */
  summary: z.string(),
  lost: z.int(),
  changed: z.int(),
  /** The app's bundle id once signed. */
  bundle_id: z.string(),
  /** What the install does to the copy on the phone: beside it (DUP), or over one signed by another team; null otherwise. */
  install_note: z.optional(z.nullable(z.string())),
  components: z.array(componentCapabilities),
});
export type ModeCapabilities = z.infer<typeof modeCapabilities>;

export const versionCapabilities = z.object({
  /** The team that would sign for the viewer; null before they have a Registered device on one. */
  team_id: z.nullable(z.string()),
  modes: z.array(modeCapabilities),
});
export type VersionCapabilities = z.infer<typeof versionCapabilities>;

/**
 * GET /api/admin/capabilities: the Done versions (newest first) whose signing loses capabilities,
 * each capability with the parts that lose it and what the operator could do.
 */
export const adminCapabilityEntry = z.object({
  app_id: z.string(),
  app_ver_id: z.string(),
  name: z.string(),
  version: z.string(),
  summary: z.string(),
  lost: z.array(
    z.object({
      id: z.string(),
      name: z.string(),
      /** The components that lose it, by name. */
      parts: z.array(z.string()),
      operator: z.nullable(z.string()),
    }),
  ),
});
export type AdminCapabilityEntry = z.infer<typeof adminCapabilityEntry>;
export const adminCapabilities = z.array(adminCapabilityEntry);

/**
 * GET and PUT /api/admin/capabilities/copy-app-ids: whether a DUP copy is signed for an explicit
 * App ID that App Store Connect makes with the capabilities the app claims, instead of the wildcard.
 */
export const adminCopyAppIds = z.object({
  /** The operator's choice (off unless turned on). */
  enabled: z.boolean(),
  /** Whether this server can act on it: it signs through App Store Connect, not the dev identity. */
  available: z.boolean(),
  /** What App Store Connect's API cannot create, so a copy still loses it: 'App groups: app group identifiers (group.…)'. */
  cannot_create: z.array(z.string()),
});
export type AdminCopyAppIds = z.infer<typeof adminCopyAppIds>;

/** PUT /api/admin/capabilities/copy-app-ids. */
export const adminCopyAppIdsRequest = z.object({ enabled: z.boolean() });
export type AdminCopyAppIdsRequest = z.infer<typeof adminCopyAppIdsRequest>;
