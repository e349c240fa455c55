/**
 * The dev identity as a signing identity (ports.ts): dev-identity.ts makes its CA, certificates and
 * profiles; this keeps them sealed in the database and answers as every identity does. It has no
 * developer account, so it registers no device.
 */
import type { Database } from '../../db/client.js';
import type { SecretBox } from '../../platform/secrets.js';
import { settingOrCreate } from '../../platform/settings.js';
import { certificateDetails, chainDetails, describeCertificate } from './certificate-details.js';
import {
  createDevIdentity,
  createDevProfile,
  devIdentitySource,
  DEV_IDENTITY_LABEL,
  issueDevCertificate,
  renewDevIdentity,
  type DevIdentity,
} from './dev-identity.js';
import type { FeatherCertificate, SigningIdentityProvider } from './ports.js';
import * as q from './queries.js';

const DEV_IDENTITY_SETTING = 'dev_identity';
const DEV_IDENTITY_PURPOSE = 'dev-identity';
const DEV_FEATHER_SETTING = 'dev_feather_identity';
const FEATHER_PURPOSE = 'feather-identity';
const FEATHER_LABEL = 'Sideport Feather';

/** Stores a dev identity (sealed) as the one every process signs with; recovery's replacement writes it so. */
export async function saveDevIdentity(
  db: Database,
  secrets: SecretBox,
  identity: DevIdentity,
): Promise<void> {
  await q.writeSetting(
    db,
    DEV_IDENTITY_SETTING,
    secrets.seal(JSON.stringify(identity), DEV_IDENTITY_PURPOSE),
  );
}

/**
 * The dev identity (docs/architecture.md, Topology, embedded default): made once, sealed with SECRET_KEY and
 * kept in the database, so every process and every restart signs with the same one. It is read
 * from there each time (opened again only when it changed), so a certificate another process made
 * in place of a revoked one is used at once.
 */
export function createDevIdentityProvider(deps: {
  db: Database;
  secrets: SecretBox;
  clock: () => Date;
  /** RENEW_BEFORE_DAYS: a renewal lasts well beyond it (a new CA when the old one would not). */
  renewBeforeMs?: number;
}): SigningIdentityProvider {
  const { db, secrets, clock } = deps;
  let opened: { sealed: string; identity: DevIdentity } | undefined;
  const open = (sealed: string): DevIdentity => {
    if (opened?.sealed !== sealed)
      opened = {
        sealed,
        identity: JSON.parse(secrets.open(sealed, DEV_IDENTITY_PURPOSE).toString('utf8')) as DevIdentity,
      };
    return opened.identity;
  };
  const identity = async () =>
    open(
      await settingOrCreate(db, DEV_IDENTITY_SETTING, () =>
        secrets.seal(JSON.stringify(createDevIdentity({ clock })), DEV_IDENTITY_PURPOSE),
      ),
    );
  const describe = (made: DevIdentity) => describeCertificate(made.certPem, made.caCertPem);

  // The Feather certificate: issued by the same CA for a key of its own, kept sealed beside it.
  type DevFeather = { caCertPem: string; certPem: string; keyPem: string };
  const issueFeather = (authority: DevIdentity): DevFeather => ({
    caCertPem: authority.caCertPem,
    ...issueDevCertificate(authority, { clock, purpose: FEATHER_LABEL }),
  });
  const sealFeather = (feather: DevFeather) => secrets.seal(JSON.stringify(feather), FEATHER_PURPOSE);
  const openFeather = (sealed: string) =>
    JSON.parse(secrets.open(sealed, FEATHER_PURPOSE).toString('utf8')) as DevFeather;
  const featherOf = (feather: DevFeather): FeatherCertificate => ({
    source: {
      certPem: feather.certPem,
      keyPem: feather.keyPem,
      chain: [Buffer.from(feather.caCertPem, 'utf8')],
    },
    certificate: describeCertificate(feather.certPem, feather.caCertPem),
  });
  async function devFeather(): Promise<DevFeather> {
    const authority = await identity();
    const stored = openFeather(
      await settingOrCreate(db, DEV_FEATHER_SETTING, () => sealFeather(issueFeather(authority))),
    );
    // Issued by a CA recovery has since replaced: issued again by the current one.
    if (stored.caCertPem === authority.caCertPem) return stored;
    const again = issueFeather(authority);
    await q.writeSetting(db, DEV_FEATHER_SETTING, sealFeather(again));
    return again;
  }

  return {
    kind: 'dev',
    featherCertificate: async () => featherOf(await devFeather()),
    async featherDetails() {
      const sealed = await q.readSetting(db, DEV_FEATHER_SETTING);
      return sealed === undefined ? undefined : certificateDetails(openFeather(sealed).certPem);
    },
    async rotateFeatherCertificate() {
      const made = issueFeather(await identity());
      await q.writeSetting(db, DEV_FEATHER_SETTING, sealFeather(made));
      return featherOf(made);
    },
    async makeFeatherProfile({ userId, udids }) {
      const feather = await devFeather();
      return createDevProfile(
        { ...(await identity()), certPem: feather.certPem, keyPem: feather.keyPem },
        { devices: udids, name: `${FEATHER_LABEL} ${userId}`, clock },
      ).bytes;
    },
    description: `${DEV_IDENTITY_LABEL}: a local CA made by Sideport. It runs the whole pipeline; real devices will not install what it signs.`,
    source: async () => devIdentitySource(await identity()),
    details: async () => chainDetails(devIdentitySource(await identity())),
    caCertificatePem: async () => (await identity()).caCertPem,
    currentCertificate: async () => describe(await identity()),
    async replaceCertificate(_reason, options = {}) {
      await identity(); // made first, if it never was
      return db.transaction(async (tx) => {
        await q.lockCertificateMaking(tx);
        const stored = open((await q.readSetting(tx, DEV_IDENTITY_SETTING))!);
        if (options.ifCurrent !== undefined && describe(stored).fingerprint !== options.ifCurrent) {
          return { certificate: describe(stored), replaced: false };
        }
        const renewed = renewDevIdentity(stored, { clock, renewBeforeMs: deps.renewBeforeMs ?? 14 * DAY_MS });
        await saveDevIdentity(tx, secrets, renewed);
        const note =
          renewed.caCertPem === stored.caCertPem
            ? undefined
            : 'Its CA was close to its end too: a new CA issued the new certificate.';
        return { certificate: describe(renewed), replaced: true, ...(note ? { note } : {}) };
      });
    },
    async makeProfile({ userId, udids }) {
      const made = createDevProfile(await identity(), {
        devices: udids,
        name: `${DEV_IDENTITY_LABEL} ${userId}`,
        clock: deps.clock,
      });
      return { bytes: made.bytes, uuid: made.uuid, expiresAt: made.expirationDate };
    },
  };
}

const DAY_MS = 86_400_000;
