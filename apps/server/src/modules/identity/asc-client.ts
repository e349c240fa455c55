/**
 * App Store Connect API client for what the sign service needs from the operator's Apple developer
 * account: devices, the wildcard bundle id (and DUP copies' explicit ones with their capabilities),
 * ad-hoc profiles, distribution certificates. How it
 * talks to Apple (the token, the timeouts, the pages) is asc-transport.ts; what it reads,
 * asc-resources.ts; how Apple's refusals read, asc-errors.ts.
 */
import { createPrivateKey, createPublicKey } from 'node:crypto';
import forge from 'node-forge';
import { generateRsaKeyPair } from '../../platform/pki.js';
import { isSameUdid } from '../devices/udid.js';
import { AscError, isAlreadyExists } from './asc-errors.js';
import {
  parseBundleIdCapabilitiesResponse,
  parseBundleIdCapabilityResponse,
  parseBundleIdResponse,
  parseBundleIdsResponse,
  parseCertificateResponse,
  parseCertificatesResponse,
  parseDeviceResponse,
  parseDevicesResponse,
  parseProfileResponse,
  parseProfilesResponse,
  type AscCertificate,
  type AscDevice,
  type AscProfile,
} from './asc-resources.js';
import { createAscTransport, type AscClientOptions } from './asc-transport.js';

export type AscPlatform = 'IOS' | 'MAC_OS';

export interface RegisteredDevice {
  readonly device: AscDevice;
  /** 'created' new on the account; 'found' already there and enabled; 'enabled' there but disabled, now enabled. */
  readonly outcome: 'created' | 'found' | 'enabled';
}

export interface CreatedCertificate {
  readonly certificate: AscCertificate;
  readonly certificatePem: string;
  /** The key the client made for the CSR (PKCS#8 PEM): seal it before storing. */
  readonly privateKeyPem: string;
}

export interface AscClient {
  /** Registers a UDID; one Apple already has is reused (and enabled if disabled), not an error. */
  registerDevice(device: { name: string; udid: string; platform: AscPlatform }): Promise<RegisteredDevice>;
  listDevices(filter?: { platform?: AscPlatform; status?: 'ENABLED' | 'DISABLED' }): Promise<AscDevice[]>;
  /** The bundle id resource with this identifier ('*' or 'com.example.*'), made on first use; returns its id. */
  ensureBundleId(bundleId: { identifier: string; name: string; platform?: AscPlatform }): Promise<string>;
  /**
   * Enables these capability types (Apple's CapabilityType) on an explicit bundle id, those not
   * enabled yet; one another process enabled meanwhile (Apple's 409) counts as enabled. Returns
   * every type the bundle id has then.
   */
  ensureCapabilities(bundleIdId: string, capabilityTypes: readonly string[]): Promise<string[]>;
  /** An IOS_APP_ADHOC profile; profiles cannot be edited, so a change of devices means a new one. */
  createAdHocProfile(profile: {
    name: string;
    bundleIdId: string;
    certificateIds: readonly string[];
    deviceIds: readonly string[];
  }): Promise<AscProfile & { content: Buffer }>;
  listProfiles(filter?: { name?: string }): Promise<AscProfile[]>;
  /** Deleting a profile that is already gone succeeds. */
  deleteProfile(id: string): Promise<void>;
  listCertificates(filter?: { certificateType?: string }): Promise<AscCertificate[]>;
  /** Makes a key pair and CSR here, and has Apple issue a distribution certificate for it. */
  createDistributionCertificate(options?: {
    certificateType?: 'DISTRIBUTION' | 'IOS_DISTRIBUTION';
    commonName?: string;
  }): Promise<CreatedCertificate>;
}

export function createAscClient(options: AscClientOptions): AscClient {
  const { call, listAll } = createAscTransport(options);

  async function findDevice(udid: string, filtered: boolean): Promise<AscDevice | undefined> {
    const devices = await listAll(
      '/v1/devices',
      filtered ? { 'filter[udid]': udid } : {},
      parseDevicesResponse,
    );
    return devices.find((d) => isSameUdid(d.udid, udid));
  }

  async function useExisting(device: AscDevice): Promise<RegisteredDevice> {
    if (device.status !== 'DISABLED') return { device, outcome: 'found' };
    const enabled = parseDeviceResponse(
      await call('PATCH', `/v1/devices/${encodeURIComponent(device.id)}`, {
        body: { data: { type: 'devices', id: device.id, attributes: { status: 'ENABLED' } } },
      }),
    );
    return { device: enabled, outcome: 'enabled' };
  }

  const bundleIds = new Map<string, Promise<string>>();

  async function findBundleId(identifier: string): Promise<string | undefined> {
    // Apple's filter[identifier] also matches longer identifiers; only an exact one will do.
    const found = await listAll(
      '/v1/bundleIds',
      { 'filter[identifier]': identifier },
      parseBundleIdsResponse,
    );
    return found.find((b) => b.identifier === identifier)?.id;
  }

  return {
    async registerDevice({ name, udid, platform }) {
      const existing = await findDevice(udid, true);
      if (existing) return useExisting(existing);
      try {
        const created = parseDeviceResponse(
          await call('POST', '/v1/devices', {
            body: { data: { type: 'devices', attributes: { name, udid, platform } } },
          }),
        );
        return { device: created, outcome: 'created' };
      } catch (err) {
        // Apple's filter may miss a UDID stored in other letter case; its duplicate error does not.
        if (!isAlreadyExists(err)) throw err;
        const again = await findDevice(udid, false);
        if (!again) throw err;
        return useExisting(again);
      }
    },

    async listDevices(filter = {}) {
      return listAll(
        '/v1/devices',
        { 'filter[platform]': filter.platform, 'filter[status]': filter.status },
        parseDevicesResponse,
      );
    },

    ensureBundleId({ identifier, name, platform = 'IOS' }) {
      let pending = bundleIds.get(identifier);
      if (pending === undefined) {
        pending = (async () => {
          const existing = await findBundleId(identifier);
          if (existing !== undefined) return existing;
          try {
            return parseBundleIdResponse(
              await call('POST', '/v1/bundleIds', {
                body: { data: { type: 'bundleIds', attributes: { identifier, name, platform } } },
              }),
            ).id;
          } catch (err) {
            const raced = isAlreadyExists(err) ? await findBundleId(identifier) : undefined;
            if (raced === undefined) throw err;
            return raced;
          }
        })();
        bundleIds.set(identifier, pending);
        // A failure is not remembered: the next call asks again.
        pending.catch(() => bundleIds.delete(identifier));
      }
      return pending;
    },

    async ensureCapabilities(bundleIdId, capabilityTypes) {
      const path = `/v1/bundleIds/${encodeURIComponent(bundleIdId)}/bundleIdCapabilities`;
      const enabled = new Set(
        (await listAll(path, {}, parseBundleIdCapabilitiesResponse)).map((c) => c.capabilityType),
      );
      for (const capabilityType of capabilityTypes) {
        if (enabled.has(capabilityType)) continue;
        try {
          parseBundleIdCapabilityResponse(
            await call('POST', '/v1/bundleIdCapabilities', {
              body: {
                data: {
                  type: 'bundleIdCapabilities',
                  attributes: { capabilityType, ...CAPABILITY_SETTINGS[capabilityType] },
                  relationships: { bundleId: { data: { type: 'bundleIds', id: bundleIdId } } },
                },
              },
            }),
          );
        } catch (err) {
          if (!isAlreadyExists(err)) throw err;
        }
        enabled.add(capabilityType);
      }
      return [...enabled].sort();
    },

    async createAdHocProfile({ name, bundleIdId, certificateIds, deviceIds }) {
      const profile = parseProfileResponse(
        await call('POST', '/v1/profiles', {
          body: {
            data: {
              type: 'profiles',
              attributes: { name, profileType: 'IOS_APP_ADHOC' },
              relationships: {
                bundleId: { data: { type: 'bundleIds', id: bundleIdId } },
                certificates: { data: certificateIds.map((id) => ({ type: 'certificates', id })) },
                devices: { data: deviceIds.map((id) => ({ type: 'devices', id })) },
              },
            },
          },
        }),
      );
      if (profile.content === undefined || profile.content.length === 0) {
        throw new AscError(
          'OTHER',
          `App Store Connect created profile "${profile.name}" but sent no profile content.`,
        );
      }
      return { ...profile, content: profile.content };
    },

    async listProfiles(filter = {}) {
      return listAll('/v1/profiles', { 'filter[name]': filter.name }, parseProfilesResponse);
    },

    async deleteProfile(id) {
      try {
        await call('DELETE', `/v1/profiles/${encodeURIComponent(id)}`);
      } catch (err) {
        if (err instanceof AscError && err.apple?.status === 404) return;
        throw err;
      }
    },

    async listCertificates(filter = {}) {
      return listAll(
        '/v1/certificates',
        { 'filter[certificateType]': filter.certificateType },
        parseCertificatesResponse,
      );
    },

    async createDistributionCertificate({ certificateType = 'DISTRIBUTION', commonName = 'Sideport' } = {}) {
      const { privateKeyPem, csrPem, publicKeyDer } = makeCsr(commonName);
      const certificate = parseCertificateResponse(
        await call('POST', '/v1/certificates', {
          body: { data: { type: 'certificates', attributes: { csrContent: csrPem, certificateType } } },
        }),
      );
      const der = certificate.content;
      if (der === undefined || der.length === 0) {
        throw new AscError(
          'OTHER',
          `App Store Connect created certificate ${certificate.id} but sent no certificate content.`,
        );
      }
      let certificatePem: string;
      try {
        const parsed = forge.pki.certificateFromAsn1(
          forge.asn1.fromDer(forge.util.createBuffer(der.toString('binary'))),
        );
        certificatePem = forge.pki.certificateToPem(parsed);
      } catch (err) {
        throw new AscError(
          'OTHER',
          `App Store Connect's certificate ${certificate.id} does not parse as an X.509 certificate.`,
          undefined,
          { cause: err },
        );
      }
      const issuedFor = createPublicKey(certificatePem).export({ type: 'spki', format: 'der' });
      if (!issuedFor.equals(publicKeyDer)) {
        throw new AscError(
          'OTHER',
          `App Store Connect's certificate ${certificate.id} is not for the key Sideport sent.`,
        );
      }
      return { certificate, certificatePem, privateKeyPem };
    },
  };
}

/**
 * The settings a capability is enabled with, where it takes one: Sign in with Apple as the app's
 * own primary App ID (as fastlane's `produce` enables it).
 */
const CAPABILITY_SETTINGS: Record<string, { settings: unknown[] }> = {
  APPLE_ID_AUTH: {
    settings: [{ key: 'APPLE_ID_AUTH_APP_CONSENT', options: [{ key: 'PRIMARY_APP_CONSENT' }] }],
  },
};

/** An RSA 2048 key (as Apple's code-signing certificates use) and a CSR for it, signed SHA-256. */
function makeCsr(commonName: string) {
  const { privateKey: forgeKey, publicKey, privateKeyPem } = generateRsaKeyPair();
  const csr = forge.pki.createCertificationRequest();
  csr.publicKey = publicKey;
  csr.setSubject([{ name: 'commonName', value: commonName }]);
  csr.sign(forgeKey, forge.md.sha256.create());
  const publicKeyDer = createPublicKey(createPrivateKey(privateKeyPem)).export({
    type: 'spki',
    format: 'der',
  });
  return { privateKeyPem, csrPem: forge.pki.certificationRequestToPem(csr), publicKeyDer };
}
