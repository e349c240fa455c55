/**
 * The `apple` signing identity: the operator's Apple developer account through App Store Connect
 * (ASC_KEY_ID, ASC_ISSUER_ID, ASC_PRIVATE_KEY). Devices are registered on the account; each user's
 * ad-hoc profile lists that user's Registered devices by Apple's ids, for one wildcard App ID and
 * one distribution certificate: the operator's (SIGN_P12, found on the account by its serial) or one
 * Sideport has Apple issue for a key it makes, kept sealed with SECRET_KEY in the database.
 */
import { randomBytes } from 'node:crypto';
import forge from 'node-forge';
import {
  completeIdentityChain,
  loadIdentity,
  parseProfile,
  type IdentitySource,
  type IssuerFetcher,
} from '@sideport/ipa';
import type { Database } from '../../db/client.js';
import { fail } from '../../platform/errors.js';
import type { SecretBox } from '../../platform/secrets.js';
import { DeviceWaitsForApple } from '../devices/apple-wait.js';
import type { DeviceService } from '../devices/service.js';
import { canonicalUdid } from '../devices/udid.js';
import type { AscClient } from './asc-client.js';
import { isAscError, type AscErrorKind } from './asc-errors.js';
import type { AscCertificate } from './asc-resources.js';
import { createKeptIssuerFetcher } from './ca-issuers.js';
import * as q from './queries.js';
import { certificateDetails, chainDetails, describeCertificate } from './certificate-details.js';
import type {
  CertificateReplacement,
  ExplicitAppId,
  IdentityDetails,
  SigningIdentityProvider,
} from './ports.js';

/** Apple's refusal of a profile's devices: 'There are no current ios devices on this team matching ...'. */
const refusesDevices = (err: unknown) =>
  isAscError(err) &&
  err.apple?.code === 'ENTITY_ERROR.RELATIONSHIP.INVALID' &&
  /\bdevices\b/i.test(err.apple.detail ?? '');

/** The App ID every profile is for: a wildcard, so any bundle id (DUP copies included) signs. */
export const WILDCARD_BUNDLE_ID = { identifier: '*', name: 'Sideport Wildcard' } as const;
const CREATED_IDENTITY_PURPOSE = 'apple-signing-identity';
/** The fingerprint of the SIGN_P12 certificate recovery replaced: a certificate made through the API signs instead. */
const SIGN_P12_REPLACED_SETTING = 'sign_p12_replaced';
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
  /** Fetches a certificate's CA Issuers address; kept in the database by default (ca-issuers.ts). */
  fetchIssuer?: IssuerFetcher;
  log: { info(obj: object, msg: string): void };
}

interface CreatedIdentity {
  certificateId: string;
  certPem: string;
  keyPem: string;
  /**
   * Its issuers up to the root (PEM, nearest first), found when it was made: from its CA Issuers
   * address or Apple's shipped CA certificates. Absent in identities made before they were kept.
   */
  chainPems?: string[];
}

interface Certificate {
  /** Apple's id of it (profiles list certificates by it). */
  id: string;
  /** With `chain` holding what the signature needs beyond the leaf. */
  source: IdentitySource;
  certPem: string;
  /** Its issuers up to the root, PEM, nearest first (the first is Apple's WWDR intermediate). */
  chainPems: string[];
}

/** Where the issuers of a certificate App Store Connect issued were looked for first. */
const ISSUED_ORIGIN = 'among the certificates App Store Connect returned with it';

/** Serials compared as Apple writes them: upper-case hex without leading zeros. */
const normalSerial = (serial: string) => serial.toUpperCase().replace(/^0+/, '');

/** Apple's profile names: letters, digits and spaces are safe everywhere it shows them. */
const profileName = (userId: string, now: Date) =>
  `Sideport ${userId.replace(/[^A-Za-z0-9]+/g, ' ').trim() || 'user'} ${now.toISOString().replace(/\D/g, '').slice(0, 14)} ${randomBytes(2).toString('hex')}`;

/** Apple's App ID names: letters, digits and spaces, at most 255; the copy's id says whose it is. */
const appIdName = (identifier: string) =>
  `Sideport ${identifier.replace(/[^A-Za-z0-9]+/g, ' ').trim()}`.slice(0, 255);

export function createAppleIdentityProvider(deps: AppleIdentityDeps): SigningIdentityProvider {
  const { db, secrets, clock, asc, devices, p12 } = deps;
  // Kept through the connection in use: inside the certificate lock's transaction, its own.
  const fetcherOn = (conn: Database) => deps.fetchIssuer ?? createKeptIssuerFetcher({ db: conn });
  const fetchIssuer = fetcherOn(db);
  const operator = p12 ? loadIdentity({ p12: p12.bytes, password: p12.password }) : undefined;
  const operatorPem = operator ? forge.pki.certificateToPem(operator.certificate) : undefined;
  const operatorFingerprint = operatorPem ? describeCertificate(operatorPem).fingerprint : undefined;

  /**
   * SIGN_P12 with its chain completed up to a root (its own certificates, its CA Issuers address,
   * Apple's shipped ones), once per process; refused with a sentence when an issuer is nowhere.
   * A failure is not remembered: the next use tries again.
   */
  let operatorChain: Promise<{ source: IdentitySource; chainPems: string[] }> | undefined;
  function operatorSource() {
    if (!operatorChain) {
      operatorChain = completeIdentityChain(
        { p12: p12!.bytes, password: p12!.password },
        { fetchIssuer, origin: 'in SIGN_P12' },
      ).then((source) => ({
        source,
        chainPems: loadIdentity(source).chain.map((c) => c.toString()),
      }));
      operatorChain.catch(() => (operatorChain = undefined));
    }
    return operatorChain;
  }
  const describeOperator = async () =>
    describeCertificate(operatorPem!, (await operatorSource()).chainPems[0]);

  /** The operator's certificate, found on the account by serial. */
  async function operatorCertificate(): Promise<Certificate> {
    const serial = normalSerial(operator!.certificate.serialNumber);
    const onAccount = (await asc.listCertificates()).find(
      (c) => c.serialNumber !== undefined && normalSerial(c.serialNumber) === serial,
    );
    if (!onAccount) {
      const { certificateName } = certificateDetails(operatorPem!);
      throw fail('SIGN_P12_NOT_ON_ACCOUNT', certificateName ?? 'unnamed', serial, deps.keyId);
    }
    const { source, chainPems } = await operatorSource();
    return { id: onAccount.id, source, certPem: operatorPem!, chainPems };
  }

  /** Whether SIGN_P12 signs: it is configured, and recovery did not replace its certificate. */
  const usesOperator = async (tx: Database = db) =>
    operator !== undefined && (await q.readSetting(tx, SIGN_P12_REPLACED_SETTING)) !== operatorFingerprint;

  /** Its issuers up to a root: as kept when it was made, else completed now (kept in the database as fetched). */
  async function chainOf(identity: CreatedIdentity, conn: Database): Promise<string[]> {
    if (identity.chainPems) return identity.chainPems;
    const source = await completeIdentityChain(
      { certPem: identity.certPem, keyPem: identity.keyPem },
      { fetchIssuer: fetcherOn(conn), origin: ISSUED_ORIGIN },
    );
    return loadIdentity(source).chain.map((c) => c.toString());
  }

  const fromCreated = async (identity: CreatedIdentity, conn: Database = db): Promise<Certificate> => {
    const chainPems = await chainOf(identity, conn);
    return {
      id: identity.certificateId,
      source: {
        certPem: identity.certPem,
        keyPem: identity.keyPem,
        chain: chainPems.map((pem) => Buffer.from(pem)),
      },
      certPem: identity.certPem,
      chainPems,
    };
  };

  // Each account of a pool keeps its own made certificate.
  const identitySetting = deps.identitySetting ?? q.createdIdentitySetting();
  const openCreated = (sealed: string) =>
    JSON.parse(secrets.open(sealed, CREATED_IDENTITY_PURPOSE).toString('utf8')) as CreatedIdentity;
  const readCreated = async (tx: Database): Promise<CreatedIdentity | undefined> => {
    const sealed = await q.findCreatedIdentity(tx, identitySetting);
    return sealed === undefined ? undefined : openCreated(sealed);
  };

  /**
   * The certificate Sideport made, or a new one when there is none usable (never made, expiring,
   * or gone from the account). Made under a database lock, so several processes make one.
   */
  async function createdCertificate(): Promise<{ sealed: string; certificate: Certificate }> {
    return db.transaction(async (tx) => {
      await q.lockCertificateMaking(tx);
      const sealed = await q.findCreatedIdentity(tx, identitySetting);
      const stored = sealed === undefined ? undefined : openCreated(sealed);
      if (sealed !== undefined && stored) {
        const expiresAt = certificateDetails(stored.certPem).certificateExpiresAt!;
        const listed: AscCertificate[] = await asc.listCertificates();
        if (
          expiresAt.getTime() > clock().getTime() + DAY_MS &&
          listed.some((c) => c.id === stored.certificateId)
        ) {
          return { sealed, certificate: await fromCreated(stored, tx) };
        }
      }
      return makeCertificate(tx);
    });
  }

  /**
   * Has Apple issue a new distribution certificate for a new key, and keeps it sealed (in the
   * caller's transaction) with its chain up to a root. One whose issuer cannot be found is refused
   * with a sentence and not kept: it would sign with the leaf alone, which devices refuse.
   */
  async function makeCertificate(tx: Database): Promise<{ sealed: string; certificate: Certificate }> {
    const made = await asc.createDistributionCertificate({ commonName: 'Sideport' });
    const completed = await completeIdentityChain(
      { certPem: made.certificatePem, keyPem: made.privateKeyPem },
      { fetchIssuer: fetcherOn(tx), origin: ISSUED_ORIGIN },
    );
    const identity: CreatedIdentity = {
      certificateId: made.certificate.id,
      certPem: made.certificatePem,
      keyPem: made.privateKeyPem,
      chainPems: loadIdentity(completed).chain.map((c) => c.toString()),
    };
    const sealed = secrets.seal(JSON.stringify(identity), CREATED_IDENTITY_PURPOSE);
    await q.saveCreatedIdentity(tx, sealed, identitySetting);
    deps.log.info(
      { certificateId: made.certificate.id, keyId: deps.keyId },
      'made a distribution certificate through App Store Connect',
    );
    return { sealed, certificate: await fromCreated(identity, tx) };
  }

  // The Feather certificate (GET /api/feather/cert): a second distribution certificate Apple issues
  // on the same account for a key of its own, kept sealed beside the signing one.
  const featherSetting = `${identitySetting}:feather`;
  const featherOf = (made: CreatedIdentity) => ({
    source: { certPem: made.certPem, keyPem: made.keyPem },
    certificate: describeCertificate(made.certPem),
  });

  async function makeFeather(tx: Database): Promise<CreatedIdentity> {
    const made = await asc.createDistributionCertificate({ commonName: 'Sideport Feather' });
    const identity: CreatedIdentity = {
      certificateId: made.certificate.id,
      certPem: made.certificatePem,
      keyPem: made.privateKeyPem,
    };
    await q.saveCreatedIdentity(
      tx,
      secrets.seal(JSON.stringify(identity), CREATED_IDENTITY_PURPOSE),
      featherSetting,
    );
    deps.log.info(
      { certificateId: made.certificate.id, keyId: deps.keyId },
      'made the Feather distribution certificate through App Store Connect',
    );
    return identity;
  }

  /** The Feather certificate, or a new one when there is none usable (never made, expiring, gone from the account). */
  async function featherCreated(): Promise<CreatedIdentity> {
    return db.transaction(async (tx) => {
      await q.lockCertificateMaking(tx);
      const sealed = await q.findCreatedIdentity(tx, featherSetting);
      const stored = sealed === undefined ? undefined : openCreated(sealed);
      if (stored) {
        const expiresAt = certificateDetails(stored.certPem).certificateExpiresAt!;
        if (
          expiresAt.getTime() > clock().getTime() + DAY_MS &&
          (await asc.listCertificates()).some((c) => c.id === stored.certificateId)
        )
          return stored;
      }
      return makeFeather(tx);
    });
  }

  // The operator's certificate is looked up once per process; a failure is not remembered, so the
  // next sign asks again.
  let operatorLookup: Promise<Certificate> | undefined;
  // The made certificate this process signs with, and the stored value it came from: when another
  // process stores a new one (recovery), it is used from the next read on.
  let adopted: { sealed: string; certificate: Certificate } | undefined;
  let firstLook: Promise<Certificate> | undefined;

  async function madeCertificate(): Promise<Certificate> {
    const sealed = await q.findCreatedIdentity(db, identitySetting);
    if (sealed !== undefined && adopted !== undefined) {
      if (adopted.sealed !== sealed)
        adopted = { sealed, certificate: await fromCreated(openCreated(sealed)) };
      return adopted.certificate;
    }
    if (!firstLook) {
      firstLook = createdCertificate().then((found) => {
        adopted = found;
        return found.certificate;
      });
      void firstLook.catch(() => {}).finally(() => (firstLook = undefined));
    }
    return firstLook;
  }

  async function useCertificate(): Promise<Certificate> {
    if (!(await usesOperator())) return madeCertificate();
    if (!operatorLookup) {
      operatorLookup = operatorCertificate();
      operatorLookup.catch(() => (operatorLookup = undefined));
    }
    return operatorLookup;
  }

  /** Apple's ids of the user's Registered devices listed in `udids`, registering any Apple lacks. */
  async function appleDeviceIds(userId: string, udids: readonly string[]): Promise<string[]> {
    const wanted = new Set(udids.map(canonicalUdid));
    const ids: string[] = [];
    for (const device of await devices.registeredDevices(userId)) {
      if (!wanted.has(canonicalUdid(device.udid))) continue;
      let id = device.appleDeviceId;
      if (id === null) {
        // Registered before the account was configured (with the dev identity): Apple learns of it now.
        id = (
          await asc.registerDevice({
            name: `Sideport ${userId}`.slice(0, 50),
            udid: device.udid,
            platform: device.platform,
          })
        ).device.id;
        await devices.setAppleDeviceId(device.id, id);
      }
      ids.push(id);
    }
    return ids;
  }

  /** A DUP copy's explicit App ID, made on first use, with the capabilities it claims enabled. */
  async function explicitBundleId(appId: ExplicitAppId): Promise<string> {
    const id = await asc.ensureBundleId({ identifier: appId.identifier, name: appIdName(appId.identifier) });
    await asc.ensureCapabilities(id, appId.capabilityTypes);
    return id;
  }

  return {
    kind: 'apple',
    description: `The operator's Apple developer account (App Store Connect key ${deps.keyId}), signing with ${
      operator
        ? 'the distribution certificate in SIGN_P12'
        : 'a distribution certificate Sideport had Apple issue'
    }. Devices install what it signs.`,

    // SIGN_P12 signs without asking Apple: only a profile needs its id on the account (useCertificate).
    source: async () =>
      (await usesOperator()) ? (await operatorSource()).source : (await madeCertificate()).source,

    // SIGN_P12's chain is completed at start, so that a .p12 whose issuer is nowhere stops it with a sentence.
    prepare: async () => {
      if (operator) await operatorSource();
    },

    // So recovery learns that SIGN_P12's certificate was revoked even once Apple no longer lists it.
    async currentCertificate() {
      if (await usesOperator()) return describeOperator();
      const made = await madeCertificate();
      return describeCertificate(made.certPem, made.chainPems[0]);
    },

    /**
     * A new certificate on the same account, made through the API. When the certificate replaced
     * is SIGN_P12's, the made one signs from then on (Apple issues no .p12 of the operator's key),
     * and the note says so.
     */
    async replaceCertificate(reason, options = {}): Promise<CertificateReplacement> {
      const result = await db.transaction(async (tx) => {
        await q.lockCertificateMaking(tx);
        const wasOperator = await usesOperator(tx);
        const stored = wasOperator ? undefined : await readCreated(tx);
        const current = wasOperator
          ? await describeOperator()
          : stored && describeCertificate(stored.certPem, stored.chainPems?.[0]);
        if (options.ifCurrent !== undefined && current && current.fingerprint !== options.ifCurrent) {
          return { replacement: { certificate: current, replaced: false } };
        }
        const made = await makeCertificate(tx);
        if (wasOperator) await q.writeSetting(tx, SIGN_P12_REPLACED_SETTING, operatorFingerprint!);
        deps.log.info(
          { reason, certificateId: made.certificate.id, keyId: deps.keyId },
          'replaced the signing certificate',
        );
        const note = wasOperator
          ? `The certificate in SIGN_P12 (serial ${current!.serial}) no longer signs: a certificate made through App Store Connect does from now on. Put a new .p12 in SIGN_P12 to sign with your own again.`
          : undefined;
        return {
          made,
          replacement: {
            certificate: describeCertificate(made.certificate.certPem, made.certificate.chainPems[0]),
            replaced: true,
            ...(note ? { note } : {}),
          },
        };
      });
      if (result.made) adopted = result.made;
      return result.replacement;
    },

    makesExplicitAppIds: true,

    async makeProfile({ userId, udids, appId }) {
      const [cert, bundleIdId, deviceIds] = await Promise.all([
        useCertificate(),
        appId === undefined ? asc.ensureBundleId(WILDCARD_BUNDLE_ID) : explicitBundleId(appId),
        appleDeviceIds(userId, udids),
      ]);
      const made = await asc
        .createAdHocProfile({
          name: profileName(userId, clock()),
          bundleIdId,
          certificateIds: [cert.id],
          deviceIds,
        })
        .catch((err: unknown) => {
          // Apple refuses, for now, every device the profile would list (its wait after a registration).
          throw refusesDevices(err) ? new DeviceWaitsForApple(udids) : err;
        });
      const parsed = parseProfile(made.content);
      return {
        bytes: made.content,
        uuid: made.uuid ?? parsed.uuid,
        expiresAt: made.expirationDate ?? parsed.expirationDate,
        appleProfileId: made.id,
      };
    },

    dropProfile: (appleProfileId) => asc.deleteProfile(appleProfileId),

    featherCertificate: async () => featherOf(await featherCreated()),

    async featherDetails() {
      const sealed = await q.findCreatedIdentity(db, featherSetting);
      return sealed === undefined ? undefined : certificateDetails(openCreated(sealed).certPem);
    },

    // The one it replaces stays on the account until an admin revokes it on Apple's site.
    rotateFeatherCertificate: async () =>
      featherOf(
        await db.transaction(async (tx) => {
          await q.lockCertificateMaking(tx);
          return makeFeather(tx);
        }),
      ),

    async makeFeatherProfile({ userId, udids }) {
      const [feather, bundleIdId, deviceIds] = await Promise.all([
        featherCreated(),
        asc.ensureBundleId(WILDCARD_BUNDLE_ID),
        appleDeviceIds(userId, udids),
      ]);
      const made = await asc.createAdHocProfile({
        name: profileName(userId, clock()),
        bundleIdId,
        certificateIds: [feather.certificateId],
        deviceIds,
      });
      return made.content;
    },

    async registerDevice({ udid, platform, name }) {
      const { device } = await asc.registerDevice({ name, udid, platform });
      return { appleDeviceId: device.id };
    },

    needsAPerson: (err) => isAscError(err) && NEEDS_A_PERSON.has(err.kind),

    // Its chain as far as it is known without fetching (the console never waits on the network).
    async details(): Promise<IdentityDetails> {
      if (operatorPem && (await usesOperator())) {
        const known = operatorChain ? (await operatorChain.catch(() => undefined))?.source : undefined;
        return chainDetails(known ?? { p12: p12!.bytes, password: p12!.password });
      }
      const stored = await readCreated(db);
      return stored
        ? chainDetails({
            certPem: stored.certPem,
            keyPem: stored.keyPem,
            chain: (stored.chainPems ?? []).map((pem) => Buffer.from(pem)),
          })
        : { teamId: null, certificateName: null, certificateExpiresAt: null };
    },
  };
}
