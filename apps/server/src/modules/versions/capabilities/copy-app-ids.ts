/**
 * The operator's setting that keeps a DUP copy's capabilities (issue 30): when on, and the identity
 * signs through App Store Connect, a DUP sign is made for an explicit App ID of the copy's bundle id
 * with the capabilities the app claims enabled that the API can enable (packages/ipa,
 * creatableCapabilities), instead of the wildcard's. An app with extensions, a watch app or an App
 * Clip keeps the wildcard: one profile names one App ID. Kept in `settings`, off unless turned on.
 */
import { creatableCapabilities, fitsOneAppId, CAPABILITIES, type SignedComponent } from '@sideport/ipa';
import { signModeOf, type SignType } from '@sideport/contracts';
import type { Database } from '../../../db/client.js';
import * as q from './queries.js';

export const COPY_APP_IDS_SETTING = 'dup_explicit_app_ids';

/** A copy's explicit App ID: its identifier and the capability types enabled on it. */
export interface CopyAppId {
  identifier: string;
  capabilityTypes: string[];
}

/** What App Store Connect's API cannot make, so the copy loses it even with an explicit App ID. */
export const CANNOT_CREATE: readonly string[] = CAPABILITIES.flatMap((c) =>
  c.ascCannotCreate === undefined ? [] : [`${c.name}: ${c.ascCannotCreate}`],
);

/** The explicit App ID a copy of this app is signed for; undefined when one App ID cannot sign it all. */
export function copyAppIdOf(
  components: readonly SignedComponent[],
  dupSuffix: string,
): CopyAppId | undefined {
  if (!fitsOneAppId(components)) return undefined;
  const app = components.find((c) => c.path === '') ?? components[0]!;
  return { identifier: `${app.bundleId}.${dupSuffix}`, capabilityTypes: creatableCapabilities(components) };
}

export function createCopyAppIds({ db, available }: { db: Database; available: boolean }) {
  const enabled = async () => available && (await q.readSetting(db, COPY_APP_IDS_SETTING)) === 'on';
  return {
    /** Whether the identity in use can make them (App Store Connect; not the dev identity). */
    available,
    /** Whether DUP copies get explicit App IDs now: turned on, and available. */
    enabled,
    /** What the operator chose, available or not. */
    chosen: async () => (await q.readSetting(db, COPY_APP_IDS_SETTING)) === 'on',
    async choose(on: boolean): Promise<void> {
      await q.writeSetting(db, COPY_APP_IDS_SETTING, on ? 'on' : 'off');
    },
    /**
     * For a sign: the explicit App ID its copy is signed for, or undefined (another mode, the
     * setting off, the version's components not read yet, an app one App ID cannot sign).
     */
    async forSign(sign: {
      appId: number;
      appVerId: number;
      signType: number;
      dupSuffix: string;
    }): Promise<CopyAppId | undefined> {
      if (!signModeOf(sign.signType as SignType).renamesBundleIds || !(await enabled())) return undefined;
      const components = (await q.componentsOf(db, [sign])).get(`${sign.appId}/${sign.appVerId}`);
      return components ? copyAppIdOf(components, sign.dupSuffix) : undefined;
    },
  };
}

export type CopyAppIds = ReturnType<typeof createCopyAppIds>;
