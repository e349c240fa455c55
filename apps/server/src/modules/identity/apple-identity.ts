/**
 * The `apple` signing identity: the operator's Apple developer account through App Store Connect
 * (ASC_KEY_ID, ASC_ISSUER_ID, ASC_PRIVATE_KEY). Devices are registered on the account; each user's
 * ad-hoc profile lists that user's Registered devices by Apple's ids, for one wildcard App ID and
 * one distribution certificate: the operator's (SIGN_P12, found on the account by its serial) or one
 * Sideport has Apple issue for a key it makes, kept sealed with SECRET_KEY in the database.
 */
import { randomBytes } from 'node:crypto';
import forge from 'node-forge';
import { loadIdentity, parseProfile, type IdentitySource } from '@sideport/ipa';
import type { Database } from '../../db/client.js';
import { AppError } from '../../platform/errors.js';
import type { SecretBox } from '../../platform/secrets.js';
import type { DeviceService } from '../devices/service.js';
import { canonicalUdid } from '../devices/udid.js';
import { isAscError, type AscCertificate, type AscClient, type AscErrorKind } from './asc-client.js';
import * as q from './queries.js';
import { certificateDetails, type IdentityDetails, type SigningIdentityProvider } from './signing.js';

/** The App ID every profile is for: a wildcard, so any bundle id (DUP copies included) signs. */
export const WILDCARD_BUNDLE_ID = { identifier: '*', name: 'Sideport Wildcard' } as const;
const CREATED_IDENTITY_PURPOSE = 'apple-signing-identity';
const DAY_MS = 86_400_000;
/** Apple refuses these the same way until a person acts (a new key, a free slot, a new enrollment). */
const NEEDS_A_PERSON = new Set<AscErrorKind>(['DEVICE_LIMIT', 'INVALID_UDID', 'KEY_REJECTED', 'OTHER']);

export interface AppleIdentityDeps {
  db: Database;
  secrets: SecretBox;
  clock: () => Date;
  asc: AscClient;
  /** The users' Registered devices, and where Apple's id of one is kept once learnt. */
  devices: Pick<DeviceService, 'registeredDevices' | 'setAppleDeviceId'>;
  /** The account's key id, for the description. */
  keyId: string;
  /**
   * Where the certificate Sideport had Apple issue is kept (q.createdIdentitySetting): each account
   * of a pool has its own. The first account's by default.
   */
  identitySetting?: string;
  /** SIGN_P12 and its password; without it a certificate is made through the API. */
  p12?: { bytes: Buffer; password: string } | undefined;
  log: { info(obj: object, msg: string): void };
}

interface CreatedIdentity {
  certificateId: string;
  certPem: string;
  keyPem: string;
}

interface Certificate {
  /** Apple's id of it (profiles list certificates by it). */
  id: string;
  source: IdentitySource;
  certPem: string;
}

/** Serials compared as Apple writes them: upper-case hex without leading zeros. */
const normalSerial = (serial: string) => serial.toUpperCase().replace(/^0+/, '');

/** Apple's profile names: letters, digits and spaces are safe everywhere it shows them. */
const profileName = (userId: string, now: Date) =>
  `Sideport ${userId.replace(/[^A-Za-z0-9]+/g, ' ').trim() || 'user'} ${now.toISOString().replace(/\D/g, '').slice(0, 14)} ${randomBytes(2).toString('hex')}`;

export function createAppleIdentityProvider(deps: AppleIdentityDeps): SigningIdentityProvider {
  const { db, secrets, clock, asc, devices, p12 } = deps;
  const operator = p12 ? loadIdentity({ p12: p12.bytes, password: p12.password }) : undefined;
  const operatorPem = operator ? forge.pki.certificateToPem(operator.certificate) : undefined;

  /** The operator's certificate, found on the account by serial. */
  async function operatorCertificate(): Promise<Certificate> {
    const serial = normalSerial(operator!.certificate.serialNumber);
    const onAccount = (await asc.listCertificates()).find(
      (c) => c.serialNumber !== undefined && normalSerial(c.serialNumber) === serial,
    );
    if (!onAccount) {
      const { certificateName } = certificateDetails(operatorPem!);
      throw new AppError(
        502,
        'SIGN_P12_NOT_ON_ACCOUNT',
        `The certificate in SIGN_P12 ("${certificateName ?? 'unnamed'}", serial ${serial}) is not on the App Store Connect account of key ${deps.keyId}: it was revoked, or belongs to another team.`,
      );
    }
    return { id: onAccount.id, source: { p12: p12!.bytes, password: p12!.password }, certPem: operatorPem! };
  }

  const identitySetting = deps.identitySetting ?? q.createdIdentitySetting();
  const readCreated = async (tx: Database): Promise<CreatedIdentity | undefined> => {
    const sealed = await q.findCreatedIdentity(tx, identitySetting);
    return sealed === undefined ? undefined : (JSON.parse(secrets.open(sealed, CREATED_IDENTITY_PURPOSE).toString('utf8')) as CreatedIdentity);
  };

  /**
   * The certificate Sideport made, or a new one when there is none usable (never made, expiring,
   * or gone from the account). Made under a database lock, so several processes make one.
   */
  async function createdCertificate(): Promise<Certificate> {
    return db.transaction(async (tx) => {
      await q.lockCertificateMaking(tx);
      const stored = await readCreated(tx);
      if (stored) {
        const expiresAt = certificateDetails(stored.certPem).certificateExpiresAt!;
        const listed: AscCertificate[] = await asc.listCertificates();
        if (expiresAt.getTime() > clock().getTime() + DAY_MS && listed.some((c) => c.id === stored.certificateId)) {
          return { id: stored.certificateId, source: { certPem: stored.certPem, keyPem: stored.keyPem }, certPem: stored.certPem };
        }
      }
      const made = await asc.createDistributionCertificate({ commonName: 'Sideport' });
      const identity: CreatedIdentity = { certificateId: made.certificate.id, certPem: made.certificatePem, keyPem: made.privateKeyPem };
      await q.saveCreatedIdentity(tx, secrets.seal(JSON.stringify(identity), CREATED_IDENTITY_PURPOSE), identitySetting);
      deps.log.info({ certificateId: made.certificate.id, keyId: deps.keyId }, 'made a distribution certificate through App Store Connect');
      return { id: identity.certificateId, source: { certPem: identity.certPem, keyPem: identity.keyPem }, certPem: identity.certPem };
    });
  }

  // Looked up once per process; a failure is not remembered, so the next sign asks again.
  let certificate: Promise<Certificate> | undefined;
  const useCertificate = () => {
    if (!certificate) {
      certificate = operator ? operatorCertificate() : createdCertificate();
      certificate.catch(() => (certificate = undefined));
    }
    return certificate;
  };

  /** Apple's ids of the user's Registered devices listed in `udids`, registering any Apple lacks. */
  async function appleDeviceIds(userId: string, udids: readonly string[]): Promise<string[]> {
    const wanted = new Set(udids.map(canonicalUdid));
    const ids: string[] = [];
    for (const device of await devices.registeredDevices(userId)) {
      if (!wanted.has(canonicalUdid(device.udid))) continue;
      let id = device.appleDeviceId;
      if (id === null) {
        // Registered before the account was configured (with the dev identity): Apple learns of it now.
        id = (await asc.registerDevice({ name: `Sideport ${userId}`.slice(0, 50), udid: device.udid, platform: device.platform })).device.id;
        await devices.setAppleDeviceId(device.id, id);
      }
      ids.push(id);
    }
    return ids;
  }

  return {
    kind: 'apple',
    description: `The operator's Apple developer account (App Store Connect key ${deps.keyId}), signing with ${
      operator ? 'the distribution certificate in SIGN_P12' : 'a distribution certificate Sideport had Apple issue'
    }. Devices install what it signs.`,

    source: async () => (await useCertificate()).source,

    async makeProfile({ userId, udids }) {
      const [cert, bundleIdId, deviceIds] = await Promise.all([
        useCertificate(),
        asc.ensureBundleId(WILDCARD_BUNDLE_ID),
        appleDeviceIds(userId, udids),
      ]);
      const made = await asc.createAdHocProfile({ name: profileName(userId, clock()), bundleIdId, certificateIds: [cert.id], deviceIds });
      const parsed = parseProfile(made.content);
      return {
        bytes: made.content,
        uuid: made.uuid ?? parsed.uuid,
        expiresAt: made.expirationDate ?? parsed.expirationDate,
        appleProfileId: made.id,
      };
    },

    dropProfile: (appleProfileId) => asc.deleteProfile(appleProfileId),

    async registerDevice({ udid, platform, name }) {
      const { device } = await asc.registerDevice({ name, udid, platform });
      return { appleDeviceId: device.id };
    },

    needsAPerson: (err) => isAscError(err) && NEEDS_A_PERSON.has(err.kind),

    async details(): Promise<IdentityDetails> {
      if (operatorPem) return certificateDetails(operatorPem);
      const stored = await readCreated(db);
      return stored ? certificateDetails(stored.certPem) : { teamId: null, certificateName: null, certificateExpiresAt: null };
    },
  };
}
