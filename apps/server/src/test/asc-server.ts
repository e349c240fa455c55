/**
 * A local server speaking App Store Connect's API for the calls Sideport makes (devices, bundle
 * ids and their capabilities, profiles, certificates), for tests.
 *
 * It holds every request to Apple's published OpenAPI document (fixtures/appstoreconnect): the
 * path and method must exist, query parameters must be the operation's own with allowed values,
 * JSON bodies must validate against the operation's request schema; its own answers are checked
 * against the response schemas too. Anything off is answered as Apple would (400/404/409) and
 * recorded in `violations`, which tests expect to stay empty. The bearer JWT is verified against
 * the API key's public half (ES256 signature, kid, iss, aud, exp at most 20 minutes after iat).
 * Errors use Apple's envelope `{"errors":[{id, status, code, title, detail}]}` with the texts Apple
 * sends for an exhausted device list, a malformed UDID and a refused token.
 */
import { createPublicKey, randomBytes, randomUUID, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import * as ajvFormats from 'ajv-formats';
import { decodeProtectedHeader, importSPKI, jwtVerify } from 'jose';
import forge from 'node-forge';
import type { PlistObject } from '@sideport/ipa';
import { buildProvisioningProfile } from '../modules/identity/dev-identity.js';
import { generateRsaKeyPair, uuidFrom } from '../platform/pki.js';
import { fixturesDir } from './fixtures.js';

// ---- Apple's OpenAPI document, loaded once per process -----------------------------------------

type Json = Record<string, unknown>;
interface Operation {
  method: string;
  template: string;
  pattern: RegExp;
  operationId: string;
  parameters: { name: string; in: string; required?: boolean; schema: Json; explode?: boolean }[];
  requestSchema?: Json;
  responses: Record<string, Json | undefined>;
}

interface OpenApi {
  operations: Operation[];
  validator(schema: Json): ValidateFunction;
}

let openApi: OpenApi | undefined;
function loadOpenApi(): OpenApi {
  if (openApi) return openApi;
  const doc = JSON.parse(
    readFileSync(path.join(fixturesDir, 'appstoreconnect/asc_openapi_3.7.0.json'), 'utf8'),
  ) as {
    paths: Record<string, Record<string, Json>>;
    components: Json;
  };
  const ajv = new Ajv({ strict: false, allErrors: true });
  const addFormats = ((ajvFormats as unknown as { default?: unknown }).default ?? ajvFormats) as (
    a: Ajv,
  ) => void;
  addFormats(ajv);
  // Formats the document names that JSON Schema does not define: nothing to check beyond the type.
  ajv.addFormat('number', true).addFormat('binary', true).addFormat('duration', true);
  ajv.addSchema({ components: doc.components }, 'asc');
  const compiled = new Map<string, ValidateFunction>();
  const validator = (schema: Json) => {
    // Refs in the document are '#/components/...'; inside ajv they live under the 'asc' schema.
    const text = JSON.stringify(schema).replaceAll('"#/components/', '"asc#/components/');
    let fn = compiled.get(text);
    if (!fn) compiled.set(text, (fn = ajv.compile(JSON.parse(text) as Json)));
    return fn;
  };
  const operations: Operation[] = [];
  for (const [template, item] of Object.entries(doc.paths)) {
    const shared = (item['parameters'] as Operation['parameters'] | undefined) ?? [];
    for (const [method, raw] of Object.entries(item)) {
      if (!['get', 'post', 'patch', 'delete', 'put'].includes(method)) continue;
      const op = raw as Json & {
        operationId: string;
        parameters?: Operation['parameters'];
        requestBody?: Json;
        responses?: Json;
      };
      const body = op.requestBody as { content?: { 'application/json'?: { schema: Json } } } | undefined;
      const responses: Record<string, Json | undefined> = {};
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        responses[status] = (response as { content?: { 'application/json'?: { schema: Json } } }).content?.[
          'application/json'
        ]?.schema;
      }
      operations.push({
        method: method.toUpperCase(),
        template,
        pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '([^/]+)')}$`),
        operationId: op.operationId,
        parameters: [...shared, ...(op.parameters ?? [])],
        ...(body?.content?.['application/json']
          ? { requestSchema: body.content['application/json'].schema }
          : {}),
        responses,
      });
    }
  }
  return (openApi = { operations, validator });
}

// ---- Apple's error texts ---------------------------------------------------------------------

interface AppleError {
  status: number;
  code: string;
  title: string;
  detail: string;
  source?: { pointer: string } | { parameter: string };
}

const errors = {
  notAuthorized: (): AppleError => ({
    status: 401,
    code: 'NOT_AUTHORIZED',
    title: 'Authentication credentials are missing or invalid.',
    detail:
      'Provide a properly configured and signed bearer token, and make sure that it has not expired. Learn more about Generating Tokens for API Requests https://developer.apple.com/go/?id=api-generating-tokens',
  }),
  forbidden: (): AppleError => ({
    status: 403,
    code: 'FORBIDDEN_ERROR',
    title: 'This request is forbidden for security reasons',
    detail: 'The API key in use does not allow this request',
  }),
  deviceLimit: (family: string): AppleError => ({
    status: 403,
    code: 'FORBIDDEN_ERROR',
    title: 'This request is forbidden for security reasons',
    detail: `Your development team has reached the maximum number of registered ${family} devices.`,
  }),
  invalidUdid: (udid: string): AppleError => ({
    status: 409,
    code: 'ENTITY_ERROR.ATTRIBUTE.INVALID',
    title: 'An attribute in the provided entity has invalid value',
    detail: `An invalid value '${udid}' was provided for the parameter 'udid'.`,
    source: { pointer: '/data/attributes/udid' },
  }),
  attributeInvalid: (pointer: string, detail: string): AppleError => ({
    status: 409,
    code: 'ENTITY_ERROR.ATTRIBUTE.INVALID',
    title: 'An attribute value is invalid.',
    detail,
    source: { pointer },
  }),
  relationshipInvalid: (pointer: string, detail: string): AppleError => ({
    status: 409,
    code: 'ENTITY_ERROR.RELATIONSHIP.INVALID',
    title: 'The provided entity includes a relationship with an invalid value',
    detail,
    source: { pointer },
  }),
  entity: (detail: string): AppleError => ({
    status: 422,
    code: 'ENTITY_UNPROCESSABLE',
    title: 'The request entity is not valid.',
    detail,
  }),
  parameter: (parameter: string, detail: string): AppleError => ({
    status: 400,
    code: 'PARAMETER_ERROR.INVALID',
    title: 'A parameter has an invalid value',
    detail,
    source: { parameter },
  }),
  notFound: (type: string, id: string): AppleError => ({
    status: 404,
    code: 'NOT_FOUND',
    title: 'The specified resource does not exist',
    detail: `There is no resource of type '${type}' with id '${id}'`,
  }),
  noPath: (path: string): AppleError => ({
    status: 404,
    code: 'NOT_FOUND',
    title: 'The specified resource does not exist',
    detail: `The path provided does not match a defined resource type. (${path})`,
  }),
  // Apple's answer when a key passes its rate limit (App Store Connect API, Identifying rate limits).
  throttled: (): AppleError => ({
    status: 429,
    code: 'RATE_LIMIT_EXCEEDED',
    title: 'The request rate limit has been reached.',
    detail:
      "We've received too many requests for this API. Please wait and try again or slow down your request rate.",
  }),
  unavailable: (): AppleError => ({
    status: 503,
    code: 'SERVICE_UNAVAILABLE',
    title: 'The service is currently unavailable',
    detail: 'The service is temporarily unavailable. Please try again later.',
  }),
};

// ---- state ---------------------------------------------------------------------------------------

export interface AscServerDevice {
  id: string;
  name: string;
  udid: string;
  platform: string;
  status: 'ENABLED' | 'DISABLED';
  deviceClass: string;
  model: string;
  addedDate: Date;
}
export interface AscServerBundleId {
  id: string;
  identifier: string;
  name: string;
  platform: string;
  seedId: string;
  /** Its enabled capabilities: a new explicit App ID comes with Apple's defaults, a wildcard with none. */
  capabilities: AscServerCapability[];
}
export interface AscServerCapability {
  /** '<bundle id's id>_<capabilityType>', as Apple names them. */
  id: string;
  capabilityType: string;
  settings?: unknown[];
}
export interface AscServerCertificate {
  id: string;
  certificateType: string;
  name: string;
  displayName: string;
  serialNumber: string;
  expirationDate: Date;
  der: Buffer;
}
export interface AscServerProfile {
  id: string;
  name: string;
  uuid: string;
  profileType: string;
  createdDate: Date;
  expirationDate: Date;
  content: Buffer;
  bundleIdId: string;
  certificateIds: string[];
  deviceIds: string[];
}

export interface RecordedAscRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  body: unknown;
  operationId?: string;
  /** The bearer token as sent. */
  token?: string;
}

/** One Apple developer account on the server: its API key, team and device limit. */
export interface AscServerAccountOptions {
  readonly keyId: string;
  readonly issuerId: string;
  /** The API key's public half (SPKI PEM), or its private key PEM, from which the public half is taken. */
  readonly keyPem: string;
  readonly teamId?: string;
  /** Devices per family (iPhone, iPad, Apple TV, Apple Watch, Mac ...) before Apple refuses more; Apple's is 100. */
  readonly deviceLimit?: number;
}

export interface AscServerOptions extends AscServerAccountOptions {
  /** The server's own clock, for token expiry. */
  readonly clock?: () => Date;
  /** Items per page at most, whatever `limit` asks (Apple's cap is 200); small values exercise paging. */
  readonly maxPageSize?: number;
  /**
   * More accounts on the same server, each with its own key, team, devices, certificates and
   * profiles: a request is the account's whose key id its token names, as at Apple.
   */
  readonly accounts?: readonly AscServerAccountOptions[];
}

/** Apple's device classes (the document's `deviceClass`); Apple counts its limit per family of them. */
export type AscDeviceClass = 'IPHONE' | 'IPAD' | 'IPOD' | 'APPLE_TV' | 'APPLE_WATCH' | 'MAC';

/** THROTTLED: 429, Apple's rate limit of the key (with Retry-After when the test gives one). */
export type AscFailure = 'UNAVAILABLE' | 'THROTTLED' | 'KEY_FORBIDDEN' | 'TOKEN_REFUSED' | 'HANG';

/** One account's state, as a test reads and changes it. */
export interface AscServerAccount {
  readonly keyId: string;
  readonly issuerId: string;
  readonly teamId: string;
  /** The intermediate that issues the account's certificates and signs its profiles (PEM). */
  readonly caPem: string;
  /** The root that issued it (PEM): the only trust anchor a check of a signature needs. */
  readonly rootPem: string;
  /**
   * Whether the intermediate is served at the address its certificates name as 'CA Issuers'
   * (true until a test says otherwise: then a leaf's issuer can be found nowhere).
   */
  setIssuerServed(served: boolean): void;
  readonly devices: AscServerDevice[];
  readonly bundleIds: AscServerBundleId[];
  readonly certificates: AscServerCertificate[];
  readonly profiles: AscServerProfile[];
  /** Devices per family before Apple refuses more; a test may change it. */
  deviceLimit: number;
  /** From now on every token of this account is refused (401), as after its key is revoked or the membership ends. */
  revokeKey(): void;
  /**
   * Apple's wait after a registration (iloader #312, SideStore #1564, as operators report it): the
   * profiles made from now on leave this registered device out, and one left with no device is
   * refused, until it is called with `left` false.
   */
  leaveOutOfProfiles(udid: string, left?: boolean): void;
  /** The issuing CA's key (PEM), for an OCSP responder that answers for its certificates. */
  readonly caKeyPem: string;
  /** Certificates issued from now on name this OCSP responder in their AIA (Apple's name ocsp.apple.com). */
  setOcspResponder(url: string): void;
  /**
   * Revokes a certificate as Apple does: it leaves the account's list and the profiles naming it
   * become INVALID. Returns it as PEM, for the responder's index.
   */
  revokeCertificate(id: string): string;
  addDevice(device: {
    udid: string;
    name?: string;
    platform?: 'IOS' | 'MAC_OS';
    status?: 'ENABLED' | 'DISABLED';
  }): AscServerDevice;
}

/** The server; its own account fields are the first account's (the options' key). */
export interface AscServer extends AscServerAccount {
  readonly url: string;
  readonly requests: RecordedAscRequest[];
  /** Every departure from Apple's OpenAPI document, by the client or by this server. */
  readonly violations: string[];
  /** Why each refused token was refused. */
  readonly authFailures: string[];
  /** Every account, the first one first. */
  readonly accounts: readonly AscServerAccount[];
  /** The account of this key id. */
  account(keyId: string): AscServerAccount;
  /**
   * What Apple knows of a device's hardware: the class a UDID registers as. Unset, a UDID in a
   * Mac's UUID form (or registered as MAC_OS) is a Mac and any other an iPhone.
   */
  setDeviceClass(udid: string, deviceClass: AscDeviceClass): void;
  /** The next request fails this way (HANG: it is never answered). */
  failNext(failure: AscFailure): void;
  /**
   * Every request fails this way until it is called with undefined (an outage, a key rate-limited
   * for an hour); `retryAfterS` is sent as Retry-After with a THROTTLED or UNAVAILABLE answer.
   */
  failAll(failure: AscFailure | undefined, options?: { retryAfterS?: number }): void;
  close(): Promise<void>;
}

/** What Apple enables on every new explicit App ID (fastlane_asc_bundle_id.json lists them). */
const DEFAULT_CAPABILITIES = ['GAME_CENTER', 'IN_APP_PURCHASE'];
/** What a wildcard App ID may have enabled: Apple's developer site offers these alone for one. */
const WILDCARD_CAPABILITIES = new Set(['GAME_CENTER', 'IN_APP_PURCHASE', 'DATA_PROTECTION']);
/**
 * The entitlements an ad-hoc (distribution) profile carries for each enabled capability, as
 * Apple-signed profiles decoded with `security cms -D` show them; the ones whose identifiers the API
 * cannot make (app groups, iCloud containers, merchant ids) grant nothing here, as on an App ID
 * with none assigned.
 */
const PROFILE_ENTITLEMENTS: Record<string, (team: string) => PlistObject> = {
  PUSH_NOTIFICATIONS: () => ({ 'aps-environment': 'production' }),
  ASSOCIATED_DOMAINS: () => ({ 'com.apple.developer.associated-domains': '*' }),
  APPLE_ID_AUTH: () => ({ 'com.apple.developer.applesignin': ['Default'] }),
  HEALTHKIT: () => ({ 'com.apple.developer.healthkit': true, 'com.apple.developer.healthkit.access': [] }),
  HOMEKIT: () => ({ 'com.apple.developer.homekit': true }),
  SIRIKIT: () => ({ 'com.apple.developer.siri': true }),
  WALLET: (team) => ({ 'com.apple.developer.pass-type-identifiers': [`${team}.*`] }),
  GAME_CENTER: () => ({ 'com.apple.developer.game-center': true }),
  NETWORK_EXTENSIONS: () => ({
    'com.apple.developer.networking.networkextension': [
      'app-proxy-provider',
      'content-filter-provider',
      'packet-tunnel-provider',
      'dns-proxy',
      'dns-settings',
      'relay',
    ],
  }),
  PERSONAL_VPN: () => ({ 'com.apple.developer.networking.vpn.api': ['allow-vpn'] }),
  HOT_SPOT: () => ({ 'com.apple.developer.networking.HotspotConfiguration': true }),
  MULTIPATH: () => ({ 'com.apple.developer.networking.multipath': true }),
  ACCESS_WIFI_INFORMATION: () => ({ 'com.apple.developer.networking.wifi-info': true }),
  NFC_TAG_READING: () => ({ 'com.apple.developer.nfc.readersession.formats': ['NDEF', 'TAG'] }),
  WIRELESS_ACCESSORY_CONFIGURATION: () => ({ 'com.apple.external-accessory.wireless-configuration': true }),
  AUTOFILL_CREDENTIAL_PROVIDER: () => ({
    'com.apple.developer.authentication-services.autofill-credential-provider': true,
  }),
  INTER_APP_AUDIO: () => ({ 'inter-app-audio': true }),
};

const DAY_MS = 86_400_000;
const MAX_BODY_BYTES = 1024 * 1024;
// What Apple accepts as a UDID: 40 hex digits, 8-16 hex digits with a dash, or a Mac's UUID.
const UDID =
  /^(?:[0-9A-Fa-f]{40}|[0-9A-Fa-f]{8}-[0-9A-Fa-f]{16}|[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12})$/;
// Apple: letters, digits, hyphens and dots; a wildcard only as the last part (or alone).
const BUNDLE_IDENTIFIER = /^(?:\*|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*(?:\.\*)?)$/;
const DISTRIBUTION_TYPES = new Set(['DISTRIBUTION', 'IOS_DISTRIBUTION']);
/** Where an account's issuing CA certificate is served, outside the API: a stand-in for certs.apple.com's WWDR file. */
const wwdrPath = (teamId: string) => `/wwdr-${teamId}.cer`;
/** Where its root is served: a stand-in for the address an intermediate's AIA names. */
const rootPath = (teamId: string) => `/root-${teamId}.cer`;

/** What every account of one server shares: the clock, paging, the server's address and Apple's knowledge of devices. */
interface Shared {
  clock: () => Date;
  maxPageSize: number;
  url(): string;
  deviceClassOf(udid: string, platform: string): AscDeviceClass;
}

/** One account: its state and the operations on it, answering as Apple does. */
async function openAccount(options: AscServerAccountOptions, shared: Shared) {
  const { clock, maxPageSize } = shared;
  const teamId = options.teamId ?? 'SPTEST1234';
  const limit = { devices: options.deviceLimit ?? 100 };
  const publicKey = await importSPKI(
    createPublicKey(options.keyPem).export({ type: 'spki', format: 'pem' }).toString(),
    'ES256',
  );
  const ca = makeIssuingCa(teamId, `${shared.url()}${rootPath(teamId)}`);

  const devices: AscServerDevice[] = [];
  const bundleIds: AscServerBundleId[] = [];
  const certificates: AscServerCertificate[] = [];
  const profiles: AscServerProfile[] = [];
  let revoked = false;

  const newId = () => randomBytes(5).toString('hex').toUpperCase();
  const iso = (date: Date) => date.toISOString().replace(/\.\d{3}Z$/, '.000+0000');

  // ---- JSON:API documents ----
  const self = (type: string, id: string) => `${shared.url()}/v1/${type}/${id}`;
  const relationship = (type: string, id: string, name: string) => ({
    links: { self: `${self(type, id)}/relationships/${name}`, related: `${self(type, id)}/${name}` },
  });
  const deviceResource = (d: AscServerDevice) => ({
    type: 'devices',
    id: d.id,
    attributes: {
      name: d.name,
      platform: d.platform,
      udid: d.udid,
      deviceClass: d.deviceClass,
      status: d.status,
      model: d.model,
      addedDate: iso(d.addedDate),
    },
    links: { self: self('devices', d.id) },
  });
  const bundleIdResource = (b: AscServerBundleId) => ({
    type: 'bundleIds',
    id: b.id,
    attributes: { name: b.name, platform: b.platform, identifier: b.identifier, seedId: b.seedId },
    relationships: {
      profiles: relationship('bundleIds', b.id, 'profiles'),
      bundleIdCapabilities: relationship('bundleIds', b.id, 'bundleIdCapabilities'),
    },
    links: { self: self('bundleIds', b.id) },
  });
  const capabilityResource = (c: AscServerCapability) => ({
    type: 'bundleIdCapabilities',
    id: c.id,
    attributes: { capabilityType: c.capabilityType, ...(c.settings ? { settings: c.settings } : {}) },
    links: { self: self('bundleIdCapabilities', c.id) },
  });
  const certificateResource = (c: AscServerCertificate) => ({
    type: 'certificates',
    id: c.id,
    attributes: {
      name: c.name,
      certificateType: c.certificateType,
      displayName: c.displayName,
      serialNumber: c.serialNumber,
      expirationDate: iso(c.expirationDate),
      certificateContent: c.der.toString('base64'),
    },
    links: { self: self('certificates', c.id) },
  });
  const profileResource = (p: AscServerProfile) => ({
    type: 'profiles',
    id: p.id,
    attributes: {
      name: p.name,
      platform: 'IOS',
      profileType: p.profileType,
      profileState: invalidProfiles.has(p.id) ? 'INVALID' : 'ACTIVE',
      profileContent: p.content.toString('base64'),
      uuid: p.uuid,
      createdDate: iso(p.createdDate),
      expirationDate: iso(p.expirationDate),
    },
    relationships: {
      bundleId: relationship('profiles', p.id, 'bundleId'),
      devices: relationship('profiles', p.id, 'devices'),
      certificates: relationship('profiles', p.id, 'certificates'),
    },
    links: { self: self('profiles', p.id) },
  });
  // Apple's links percent-encode the query (filter%5Bplatform%5D=IOS%2CMAC_OS), as a URI must.
  const linkTo = (u: URL) =>
    `${u.origin}${u.pathname}${u.search === '' ? '' : `?${new URLSearchParams(u.searchParams).toString()}`}`;
  const document = (data: unknown, requestUrl: URL) => ({ data, links: { self: linkTo(requestUrl) } });

  function page<T>(items: T[], toResource: (item: T) => unknown, requestUrl: URL) {
    const asked = Number(requestUrl.searchParams.get('limit') ?? 20);
    const size = Math.max(1, Math.min(asked, maxPageSize));
    const cursor = requestUrl.searchParams.get('cursor');
    const offset = cursor ? Number(Buffer.from(cursor, 'base64url').toString()) || 0 : 0;
    const slice = items.slice(offset, offset + size);
    const links: { self: string; next?: string } = { self: linkTo(requestUrl) };
    if (offset + size < items.length) {
      const next = new URL(requestUrl.href);
      next.searchParams.set('cursor', Buffer.from(String(offset + size)).toString('base64url'));
      links.next = linkTo(next);
    }
    return { data: slice.map(toResource), links, meta: { paging: { total: items.length, limit: size } } };
  }

  const filterValues = (requestUrl: URL, name: string) =>
    requestUrl.searchParams.get(`filter[${name}]`)?.split(',');
  const matches = (values: string[] | undefined, value: string) =>
    values === undefined || values.includes(value);

  // ---- operations ----
  type Answer = [number, unknown] | AppleError;
  const handlers: Record<string, (ctx: { url: URL; id?: string; body: Json }) => Answer> = {
    devices_getCollection({ url: u }) {
      const [udid, platform, status, id, name] = ['udid', 'platform', 'status', 'id', 'name'].map((f) =>
        filterValues(u, f),
      );
      const found = devices.filter(
        (d) =>
          matches(udid, d.udid) &&
          matches(platform, d.platform) &&
          matches(status, d.status) &&
          matches(id, d.id) &&
          matches(name, d.name),
      );
      return [200, page(found, deviceResource, u)];
    },
    devices_getInstance({ url: u, id }) {
      const device = devices.find((d) => d.id === id);
      return device ? [200, document(deviceResource(device), u)] : errors.notFound('devices', id!);
    },
    devices_createInstance({ body }) {
      const attributes = (body['data'] as Json)['attributes'] as {
        name: string;
        udid: string;
        platform: string;
      };
      if (!UDID.test(attributes.udid)) return errors.invalidUdid(attributes.udid);
      if (devices.some((d) => d.udid.toUpperCase() === attributes.udid.toUpperCase())) {
        return errors.attributeInvalid(
          '/data/attributes/udid',
          `A device with number '${attributes.udid}' already exists on this team.`,
        );
      }
      const family = FAMILIES[shared.deviceClassOf(attributes.udid, attributes.platform)];
      if (devices.filter((d) => FAMILIES[d.deviceClass as AscDeviceClass] === family).length >= limit.devices)
        return errors.deviceLimit(family);
      const device = addDevice({ ...attributes, platform: attributes.platform as 'IOS' | 'MAC_OS' });
      return [201, document(deviceResource(device), new URL(self('devices', device.id)))];
    },
    devices_updateInstance({ url: u, id, body }) {
      const device = devices.find((d) => d.id === id);
      if (!device) return errors.notFound('devices', id!);
      const data = body['data'] as {
        id: string;
        attributes?: { name?: string; status?: 'ENABLED' | 'DISABLED' };
      };
      if (data.id !== id)
        return errors.entity(`The id '${data.id}' in the body does not match the id '${id}' in the path.`);
      if (data.attributes?.name !== undefined) device.name = data.attributes.name;
      if (data.attributes?.status !== undefined) device.status = data.attributes.status;
      return [200, document(deviceResource(device), u)];
    },
    bundleIds_getCollection({ url: u }) {
      const [identifier, platform, id] = ['identifier', 'platform', 'id'].map((f) => filterValues(u, f));
      // Apple matches filter[identifier] loosely (a prefix finds longer identifiers too).
      const found = bundleIds.filter(
        (b) =>
          (identifier === undefined || identifier.some((i) => b.identifier.startsWith(i))) &&
          matches(platform, b.platform) &&
          matches(id, b.id),
      );
      return [200, page(found, bundleIdResource, u)];
    },
    bundleIds_getInstance({ url: u, id }) {
      const bundleId = bundleIds.find((b) => b.id === id);
      return bundleId ? [200, document(bundleIdResource(bundleId), u)] : errors.notFound('bundleIds', id!);
    },
    bundleIds_createInstance({ body }) {
      const attributes = (body['data'] as Json)['attributes'] as {
        name: string;
        identifier: string;
        platform: string;
      };
      if (!BUNDLE_IDENTIFIER.test(attributes.identifier)) {
        return errors.attributeInvalid(
          '/data/attributes/identifier',
          `An invalid value '${attributes.identifier}' was provided for the parameter 'identifier'.`,
        );
      }
      if (!/^[A-Za-z0-9 ]+$/.test(attributes.name)) {
        return errors.attributeInvalid(
          '/data/attributes/name',
          'The name may contain only letters, numbers and spaces.',
        );
      }
      if (bundleIds.some((b) => b.identifier === attributes.identifier)) {
        return {
          status: 409,
          code: 'ENTITY_ERROR.ATTRIBUTE.INVALID.DUPLICATE',
          title: 'The provided entity includes an attribute with a value that has already been used',
          detail: `An App ID with Identifier '${attributes.identifier}' is not available. Please enter a different string.`,
          source: { pointer: '/data/attributes/identifier' },
        };
      }
      const id = newId();
      const explicit = !attributes.identifier.endsWith('*');
      const bundleId: AscServerBundleId = {
        id,
        identifier: attributes.identifier,
        name: attributes.name,
        platform: attributes.platform,
        seedId: teamId,
        // As fastlane's recording of a new explicit App ID shows: Game Center and In-App Purchase on.
        capabilities: explicit
          ? DEFAULT_CAPABILITIES.map((capabilityType) => ({ id: `${id}_${capabilityType}`, capabilityType }))
          : [],
      };
      bundleIds.push(bundleId);
      return [201, document(bundleIdResource(bundleId), new URL(self('bundleIds', bundleId.id)))];
    },
    bundleIds_bundleIdCapabilities_getToManyRelated({ url: u, id }) {
      const bundleId = bundleIds.find((b) => b.id === id);
      return bundleId
        ? [200, page(bundleId.capabilities, capabilityResource, u)]
        : errors.notFound('bundleIds', id!);
    },
    bundleIdCapabilities_createInstance({ body }) {
      const data = body['data'] as {
        attributes: { capabilityType: string; settings?: unknown[] };
        relationships: { bundleId: { data: { id: string } } };
      };
      const { capabilityType, settings } = data.attributes;
      const bundleId = bundleIds.find((b) => b.id === data.relationships.bundleId.data.id);
      if (!bundleId)
        return errors.relationshipInvalid(
          '/data/relationships/bundleId',
          `There is no resource of type 'bundleIds' with id '${data.relationships.bundleId.data.id}'`,
        );
      if (bundleId.identifier.endsWith('*') && !WILDCARD_CAPABILITIES.has(capabilityType))
        return errors.attributeInvalid(
          '/data/attributes/capabilityType',
          `The capability '${capabilityType}' cannot be enabled for a wildcard App ID.`,
        );
      if (bundleId.capabilities.some((c) => c.capabilityType === capabilityType))
        return {
          status: 409,
          code: 'ENTITY_ERROR.ATTRIBUTE.INVALID.DUPLICATE',
          title: 'The provided entity includes an attribute with a value that has already been used',
          detail: `The capability '${capabilityType}' is already enabled for the App ID '${bundleId.identifier}'.`,
          source: { pointer: '/data/attributes/capabilityType' },
        };
      const capability: AscServerCapability = {
        id: `${bundleId.id}_${capabilityType}`,
        capabilityType,
        ...(settings ? { settings } : {}),
      };
      bundleId.capabilities.push(capability);
      return [
        201,
        document(capabilityResource(capability), new URL(self('bundleIdCapabilities', capability.id))),
      ];
    },
    certificates_getCollection({ url: u }) {
      const [type, id] = ['certificateType', 'id'].map((f) => filterValues(u, f));
      return [
        200,
        page(
          certificates.filter((c) => matches(type, c.certificateType) && matches(id, c.id)),
          certificateResource,
          u,
        ),
      ];
    },
    certificates_getInstance({ url: u, id }) {
      const certificate = certificates.find((c) => c.id === id);
      return certificate
        ? [200, document(certificateResource(certificate), u)]
        : errors.notFound('certificates', id!);
    },
    certificates_createInstance({ body }) {
      const attributes = (body['data'] as Json)['attributes'] as {
        csrContent: string;
        certificateType: string;
      };
      let csr: forge.pki.CertificateSigningRequest;
      try {
        csr = readCsr(attributes.csrContent);
        if (!csr.verify()) throw new Error('the CSR signature does not verify');
      } catch {
        return errors.attributeInvalid('/data/attributes/csrContent', 'The provided CSR is invalid.');
      }
      const now = clock();
      const issued = ca.issue(csr, now, attributes.certificateType, {
        ocspUrl,
        caIssuersUrl: `${shared.url()}${wwdrPath(teamId)}`,
      });
      const certificate: AscServerCertificate = {
        id: newId(),
        certificateType: attributes.certificateType,
        name: issued.commonName,
        displayName: 'Sideport Test Team',
        serialNumber: issued.serialNumber,
        expirationDate: issued.notAfter,
        der: issued.der,
      };
      certificates.push(certificate);
      return [201, document(certificateResource(certificate), new URL(self('certificates', certificate.id)))];
    },
    profiles_getCollection({ url: u }) {
      const [name, type, id] = ['name', 'profileType', 'id'].map((f) => filterValues(u, f));
      return [
        200,
        page(
          profiles.filter((p) => matches(name, p.name) && matches(type, p.profileType) && matches(id, p.id)),
          profileResource,
          u,
        ),
      ];
    },
    profiles_getInstance({ url: u, id }) {
      const profile = profiles.find((p) => p.id === id);
      return profile ? [200, document(profileResource(profile), u)] : errors.notFound('profiles', id!);
    },
    profiles_deleteInstance({ id }) {
      const at = profiles.findIndex((p) => p.id === id);
      if (at < 0) return errors.notFound('profiles', id!);
      profiles.splice(at, 1);
      return [204, undefined];
    },
    profiles_createInstance({ body }) {
      const data = body['data'] as {
        attributes: { name: string; profileType: string };
        relationships: {
          bundleId: { data: { id: string } };
          certificates: { data: { id: string }[] };
          devices?: { data?: { id: string }[] };
        };
      };
      const { name, profileType } = data.attributes;
      if (name.trim() === '')
        return errors.attributeInvalid('/data/attributes/name', 'The profile name must not be empty.');
      if (profiles.some((p) => p.name === name)) {
        return errors.attributeInvalid(
          '/data/attributes/name',
          `Multiple profiles found with the name '${name}'.  Please remove the duplicate profiles and try again.`,
        );
      }
      const bundleId = bundleIds.find((b) => b.id === data.relationships.bundleId.data.id);
      if (!bundleId)
        return errors.relationshipInvalid(
          '/data/relationships/bundleId',
          `There is no resource of type 'bundleIds' with id '${data.relationships.bundleId.data.id}'`,
        );
      const certs = data.relationships.certificates.data.map((ref) =>
        certificates.find((c) => c.id === ref.id),
      );
      if (
        certs.length === 0 ||
        certs.some(
          (c) =>
            c === undefined ||
            (profileType === 'IOS_APP_ADHOC' && !DISTRIBUTION_TYPES.has(c.certificateType)),
        )
      ) {
        return errors.relationshipInvalid(
          '/data/relationships/certificates',
          'There are no current certificates on this team matching the provided certificate IDs.',
        );
      }
      const listed = (data.relationships.devices?.data ?? []).map((ref) =>
        devices.find((d) => d.id === ref.id && d.status === 'ENABLED'),
      );
      if (profileType === 'IOS_APP_ADHOC' && (listed.length === 0 || listed.some((d) => d === undefined))) {
        return errors.relationshipInvalid(
          '/data/relationships/devices',
          'There are no current ios devices on this team matching the provided device IDs.',
        );
      }
      // Apple's wait after a registration: a device left out is missing from the profile, and a
      // profile left with none is refused as if none were on the team.
      const included = listed.filter((d) => d === undefined || !leftOut.has(d.udid.toUpperCase()));
      if (profileType === 'IOS_APP_ADHOC' && included.length === 0) {
        return errors.relationshipInvalid(
          '/data/relationships/devices',
          'There are no current ios devices on this team matching the provided device IDs.',
        );
      }
      const now = new Date(Math.floor(clock().getTime() / 1000) * 1000);
      const expirationDate = new Date(
        Math.min(now.getTime() + 365 * DAY_MS, ...certs.map((c) => c!.expirationDate.getTime())),
      );
      const uuid = uuidFrom(randomBytes(16)).toLowerCase();
      const content = buildProvisioningProfile({
        signer: ca.identity,
        name,
        uuid,
        appIdName: bundleId.name,
        bundleIdentifier: bundleId.identifier,
        entitlements: Object.assign(
          {},
          ...bundleId.capabilities.map((c) => PROFILE_ENTITLEMENTS[c.capabilityType]?.(teamId) ?? {}),
        ) as PlistObject,
        teamId,
        teamName: 'Sideport Test Team',
        devices: included.map((d) => d!.udid),
        developerCertificates: certs.map((c) => c!.der),
        creationDate: now,
        expirationDate,
      });
      const profile: AscServerProfile = {
        id: newId(),
        name,
        uuid,
        profileType,
        createdDate: now,
        expirationDate,
        content,
        bundleIdId: bundleId.id,
        certificateIds: certs.map((c) => c!.id),
        deviceIds: included.map((d) => d!.id),
      };
      profiles.push(profile);
      return [201, document(profileResource(profile), new URL(self('profiles', profile.id)))];
    },
  };

  function addDevice(device: {
    udid: string;
    name?: string;
    platform?: 'IOS' | 'MAC_OS';
    status?: 'ENABLED' | 'DISABLED';
  }): AscServerDevice {
    const platform = device.platform ?? 'IOS';
    const deviceClass = shared.deviceClassOf(device.udid, platform);
    const added: AscServerDevice = {
      id: newId(),
      name: device.name ?? 'Test device',
      udid: device.udid,
      platform,
      status: device.status ?? 'ENABLED',
      deviceClass,
      model: FAMILIES[deviceClass],
      addedDate: clock(),
    };
    devices.push(added);
    return added;
  }

  async function checkToken(token: string | undefined): Promise<string | undefined> {
    if (revoked) return 'the key is revoked';
    if (!token) return 'no bearer token';
    try {
      const protectedHeader = decodeProtectedHeader(token);
      if (protectedHeader.kid !== options.keyId)
        return `kid ${String(protectedHeader.kid)} is not the key's id`;
      if (protectedHeader.typ !== undefined && protectedHeader.typ !== 'JWT')
        return `typ ${protectedHeader.typ}`;
      const { payload } = await jwtVerify(token, publicKey, {
        algorithms: ['ES256'],
        audience: 'appstoreconnect-v1',
        issuer: options.issuerId,
        currentDate: clock(),
        requiredClaims: ['iat', 'exp'],
      });
      if (payload.exp! - payload.iat! > 20 * 60)
        return `the token lives ${payload.exp! - payload.iat!} s, more than 20 minutes`;
      if (payload.iat! > clock().getTime() / 1000 + 60) return 'the token is issued in the future';
      return undefined;
    } catch (err) {
      return (err as Error).message;
    }
  }

  // ---- certificate revocation (recovery's tests) ----
  let ocspUrl: string | undefined;
  const issuerServed = { value: true };
  const invalidProfiles = new Set<string>();
  /** UDIDs (upper case) Apple leaves out of the profiles made now: its wait after a registration. */
  const leftOut = new Set<string>();
  const revocation = {
    caKeyPem: ca.keyPem,
    /** Certificates issued from now on name this OCSP responder in their AIA. */
    setOcspResponder(responder: string) {
      ocspUrl = responder;
    },
    /** Revokes a certificate as Apple does: it leaves the list, profiles naming it become INVALID. */
    revokeCertificate(id: string) {
      const at = certificates.findIndex((c) => c.id === id);
      if (at < 0) throw new Error(`no certificate ${id} on the account`);
      const [revoked] = certificates.splice(at, 1);
      for (const p of profiles) if (p.certificateIds.includes(id)) invalidProfiles.add(p.id);
      return forge.pki.certificateToPem(
        forge.pki.certificateFromAsn1(forge.asn1.fromDer(revoked!.der.toString('binary'))),
      );
    },
  };

  return {
    keyId: options.keyId,
    issuerId: options.issuerId,
    teamId,
    /** The issuing CA's certificate (DER), served at its WWDR path, and its root's, served at its root path. */
    caDer: ca.der,
    rootDer: ca.rootDer,
    rootPem: ca.rootPem,
    get issuerServed() {
      return issuerServed.value;
    },
    setIssuerServed(served: boolean) {
      issuerServed.value = served;
    },
    ...revocation,
    caPem: forge.pki.certificateToPem(ca.identity.certificate),
    devices,
    bundleIds,
    certificates,
    profiles,
    get deviceLimit() {
      return limit.devices;
    },
    set deviceLimit(value: number) {
      limit.devices = value;
    },
    revokeKey() {
      revoked = true;
    },
    leaveOutOfProfiles(udid: string, left = true) {
      if (left) leftOut.add(udid.toUpperCase());
      else leftOut.delete(udid.toUpperCase());
    },
    addDevice,
    handlers,
    checkToken,
  };
}

export async function startAscServer(options: AscServerOptions): Promise<AscServer> {
  const api = loadOpenApi();
  const clock = options.clock ?? (() => new Date());
  const maxPageSize = Math.min(options.maxPageSize ?? 200, 200);
  const requests: RecordedAscRequest[] = [];
  const violations: string[] = [];
  const authFailures: string[] = [];
  const deviceClasses = new Map<string, AscDeviceClass>();
  let pendingFailure: AscFailure | undefined;
  let lastingFailure: { failure: AscFailure; retryAfterS?: number } | undefined;
  let url = '';
  const shared: Shared = {
    clock,
    maxPageSize,
    url: () => url,
    deviceClassOf: (udid, platform) =>
      deviceClasses.get(udid.toUpperCase()) ??
      (platform === 'MAC_OS' || /^[0-9A-F]{8}-[0-9A-F]{4}-/i.test(udid) ? 'MAC' : 'IPHONE'),
  };
  // ---- HTTP ---- (listening first: the certificates the accounts' CAs make name its address)
  const server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      violations.push(`server: ${(err as Error).stack ?? String(err)}`);
      if (!res.headersSent)
        send(res, 500, {
          errors: [{ status: '500', code: 'INTERNAL', title: 'test server failure', detail: String(err) }],
        });
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const issuing = req.method === 'GET' ? accounts.find((a) => req.url === wwdrPath(a.teamId)) : undefined;
    if (issuing && !issuing.issuerServed) return void res.writeHead(404).end();
    if (issuing)
      return void res.writeHead(200, { 'content-type': 'application/pkix-cert' }).end(issuing.caDer);
    const rooted = req.method === 'GET' ? accounts.find((a) => req.url === rootPath(a.teamId)) : undefined;
    if (rooted)
      return void res.writeHead(200, { 'content-type': 'application/pkix-cert' }).end(rooted.rootDer);
    const raw = await readBody(req);
    const requestUrl = new URL(req.url ?? '/', url);
    const method = req.method ?? 'GET';
    const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
    const op = api.operations.find((o) => o.method === method && o.pattern.test(requestUrl.pathname));
    const account = accountOf(token);
    const recorded: RecordedAscRequest = {
      method,
      path: requestUrl.pathname,
      query: Object.fromEntries(requestUrl.searchParams),
      body: raw === '' ? undefined : safeJson(raw),
      ...(op ? { operationId: op.operationId } : {}),
      ...(token ? { token } : {}),
    };
    requests.push(recorded);

    const failure = pendingFailure ?? lastingFailure?.failure;
    pendingFailure = undefined;
    const retryAfter: Record<string, string> =
      lastingFailure?.retryAfterS === undefined ? {} : { 'retry-after': String(lastingFailure.retryAfterS) };
    if (failure === 'HANG') return; // never answered; close() ends it

    if (!op) return sendError(res, violation(errors.noPath(`${method} ${requestUrl.pathname}`)));
    const refusedBecause =
      failure === 'TOKEN_REFUSED' ? 'refused on request' : await account.checkToken(token);
    if (refusedBecause !== undefined) {
      authFailures.push(refusedBecause);
      return sendError(res, errors.notAuthorized(), op);
    }
    if (failure === 'UNAVAILABLE') return sendError(res, errors.unavailable(), op, retryAfter);
    if (failure === 'THROTTLED') return sendError(res, errors.throttled(), op, retryAfter);
    if (failure === 'KEY_FORBIDDEN') return sendError(res, errors.forbidden(), op);

    const queryError = checkQuery(op, requestUrl);
    if (queryError) return sendError(res, queryError, op);
    const { error: bodyError, body } = checkBody(op, req.headers['content-type'], raw);
    if (bodyError) return sendError(res, bodyError, op);

    const handler = account.handlers[op.operationId];
    if (!handler)
      return sendError(
        res,
        violation(errors.noPath(`${op.operationId} is not implemented by the test server`)),
      );
    const id = op.pattern.exec(requestUrl.pathname)?.[1];
    const answer = handler({
      url: requestUrl,
      body,
      ...(id === undefined ? {} : { id: decodeURIComponent(id) }),
    });
    if (!Array.isArray(answer)) return sendError(res, answer, op);
    const [status, json] = answer;
    checkResponse(op, status, json);
    send(res, status, json);
  }

  function sendError(
    res: ServerResponse,
    error: AppleError,
    op?: Operation,
    headers: Record<string, string> = {},
  ): void {
    const body = {
      errors: [
        {
          id: randomUUID(),
          status: String(error.status),
          code: error.code,
          title: error.title,
          detail: error.detail,
          ...(error.source ? { source: error.source } : {}),
        },
      ],
    };
    if (op) checkResponse(op, error.status, body);
    send(res, error.status, body, headers);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const accounts = await Promise.all(
    [options, ...(options.accounts ?? [])].map((a) => openAccount(a, shared)),
  );
  const first = accounts[0]!;
  /** The account whose key the token names; the first for a token that names none (it is refused there). */
  const accountOf = (token: string | undefined) => {
    let kid: unknown;
    try {
      kid = token ? decodeProtectedHeader(token).kid : undefined;
    } catch {
      kid = undefined;
    }
    return accounts.find((a) => a.keyId === kid) ?? first;
  };

  // ---- checks against the document ----
  function checkQuery(op: Operation, requestUrl: URL): AppleError | undefined {
    const allowed = new Map(op.parameters.filter((p) => p.in === 'query').map((p) => [p.name, p]));
    for (const [name, value] of requestUrl.searchParams) {
      // Apple's next links carry a cursor the document does not list.
      if (name === 'cursor') continue;
      const parameter = allowed.get(name);
      if (!parameter)
        return violation(errors.parameter(name, `The parameter '${name}' can not be used with this request`));
      const schema = parameter.schema as { type?: string };
      const candidate =
        schema.type === 'array' ? value.split(',') : schema.type === 'integer' ? Number(value) : value;
      const validate = api.validator(parameter.schema);
      if (!validate(candidate)) {
        return violation(
          errors.parameter(
            name,
            `The parameter '${name}' has an invalid value '${value}': ${ajvText(validate)}`,
          ),
        );
      }
    }
    for (const parameter of op.parameters) {
      if (parameter.in === 'query' && parameter.required && !requestUrl.searchParams.has(parameter.name)) {
        return violation(errors.parameter(parameter.name, `The parameter '${parameter.name}' is required`));
      }
    }
    return undefined;
  }

  function checkBody(
    op: Operation,
    contentType: string | undefined,
    raw: string,
  ): { error?: AppleError; body: Json } {
    if (!op.requestSchema) {
      return raw === ''
        ? { body: {} }
        : { error: violation(errors.entity(`${op.operationId} takes no body.`)), body: {} };
    }
    if (!contentType?.startsWith('application/json')) {
      return {
        error: violation(
          errors.entity(
            `Expected a JSON body (Content-Type application/json), found ${contentType ?? 'none'}.`,
          ),
        ),
        body: {},
      };
    }
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      return { error: violation(errors.entity('The request body is not JSON.')), body: {} };
    }
    const validate = api.validator(op.requestSchema);
    if (!validate(body))
      return {
        error: violation(
          errors.entity(`The request body does not match ${op.operationId}'s schema: ${ajvText(validate)}`),
        ),
        body: {},
      };
    return { body: body as Json };
  }

  function violation(error: AppleError): AppleError {
    violations.push(`client: ${error.detail}`);
    return error;
  }

  function checkResponse(op: Operation, status: number, body: unknown): void {
    if (status === 503 || status === 429) return; // Apple may always answer these
    if (!(String(status) in op.responses)) {
      violations.push(`server: ${op.operationId} answered ${status}, which the document does not list`);
      return;
    }
    const schema = op.responses[String(status)];
    if (schema === undefined) return;
    const validate = api.validator(schema);
    if (!validate(body))
      violations.push(`server: ${op.operationId} ${status} does not match its schema: ${ajvText(validate)}`);
  }

  return {
    url,
    requests,
    violations,
    authFailures,
    accounts,
    account(keyId) {
      const found = accounts.find((a) => a.keyId === keyId);
      if (!found) throw new Error(`the test server has no account of key ${keyId}`);
      return found;
    },
    setDeviceClass(udid, deviceClass) {
      deviceClasses.set(udid.toUpperCase(), deviceClass);
    },
    failNext(failure) {
      pendingFailure = failure;
    },
    failAll(failure, options = {}) {
      lastingFailure = failure === undefined ? undefined : { failure, ...options };
    },
    // The first account's, as before there were several.
    keyId: first.keyId,
    issuerId: first.issuerId,
    teamId: first.teamId,
    caPem: first.caPem,
    rootPem: first.rootPem,
    setIssuerServed: (served) => first.setIssuerServed(served),
    devices: first.devices,
    bundleIds: first.bundleIds,
    certificates: first.certificates,
    profiles: first.profiles,
    get deviceLimit() {
      return first.deviceLimit;
    },
    set deviceLimit(value) {
      first.deviceLimit = value;
    },
    revokeKey: () => first.revokeKey(),
    leaveOutOfProfiles: (udid, left) => first.leaveOutOfProfiles(udid, left),
    addDevice: (device) => first.addDevice(device),
    caKeyPem: first.caKeyPem,
    setOcspResponder: (responder) => first.setOcspResponder(responder),
    revokeCertificate: (id) => first.revokeCertificate(id),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// ---- helpers -------------------------------------------------------------------------------------

/** Apple counts its device limit per family, and names the family in its refusal. */
const FAMILIES: Record<AscDeviceClass, string> = {
  IPHONE: 'iPhone',
  IPAD: 'iPad',
  IPOD: 'iPod touch',
  APPLE_TV: 'Apple TV',
  APPLE_WATCH: 'Apple Watch',
  MAC: 'Mac',
};

function readCsr(content: string): forge.pki.CertificateSigningRequest {
  if (content.includes('-----BEGIN')) return forge.pki.certificationRequestFromPem(content);
  const der = Buffer.from(content, 'base64').toString('binary');
  return forge.pki.certificationRequestFromAsn1(forge.asn1.fromDer(der));
}

/**
 * Stands in for Apple's WWDR intermediate (issuing certificates from CSRs) and its profile-signing
 * certificate (signing profiles): one throwaway intermediate for both, issued by a throwaway root
 * as Apple Root CA issues the WWDR ones. The intermediate names where the root is served in its
 * Authority Information Access ('CA Issuers'): the root is no Apple root a client ships.
 */
function makeIssuingCa(teamId: string, rootUrl: string) {
  const rootKeys = generateRsaKeyPair();
  const root = forge.pki.createCertificate();
  root.publicKey = rootKeys.publicKey;
  root.serialNumber = '01';
  root.validity.notBefore = new Date(Date.now() - 20 * 365 * DAY_MS);
  root.validity.notAfter = new Date(Date.now() + 20 * 365 * DAY_MS);
  const rootSubject = [
    { name: 'commonName', value: 'Test Root CA (not Apple)' },
    { name: 'organizationName', value: 'Sideport tests' },
  ];
  root.setSubject(rootSubject);
  root.setIssuer(rootSubject);
  root.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
  ]);
  root.sign(rootKeys.privateKey, forge.md.sha256.create());
  const keys = generateRsaKeyPair();
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = '02';
  cert.validity.notBefore = new Date(Date.now() - 10 * 365 * DAY_MS);
  cert.validity.notAfter = new Date(Date.now() + 10 * 365 * DAY_MS);
  const subject = [
    { name: 'commonName', value: 'Test Worldwide Developer Relations CA (not Apple)' },
    { name: 'organizationalUnitName', value: teamId },
    { name: 'organizationName', value: 'Sideport tests' },
  ];
  cert.setSubject(subject);
  cert.setIssuer(rootSubject);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, digitalSignature: true, critical: true },
    authorityInfoAccess({ caIssuersUrl: rootUrl }),
  ]);
  cert.sign(rootKeys.privateKey, forge.md.sha256.create());
  const derOf = (c: forge.pki.Certificate) =>
    Buffer.from(forge.asn1.toDer(forge.pki.certificateToAsn1(c)).getBytes(), 'binary');
  return {
    identity: {
      certificate: cert,
      privateKey: keys.privateKey,
      chain: [new X509Certificate(derOf(root))],
    },
    keyPem: forge.pki.privateKeyToPem(keys.privateKey),
    der: derOf(cert),
    rootDer: derOf(root),
    rootPem: forge.pki.certificateToPem(root),
    issue(
      csr: forge.pki.CertificateSigningRequest,
      now: Date,
      certificateType: string,
      access: { ocspUrl?: string | undefined; caIssuersUrl: string },
    ) {
      const leaf = forge.pki.createCertificate();
      leaf.publicKey = csr.publicKey!;
      leaf.serialNumber = `0${randomBytes(8).toString('hex').slice(1)}`;
      leaf.validity.notBefore = new Date(now.getTime() - 60_000);
      leaf.validity.notAfter = new Date(now.getTime() + 365 * DAY_MS);
      const kind = certificateType === 'IOS_DISTRIBUTION' ? 'iPhone Distribution' : 'Apple Distribution';
      const commonName = `${kind}: Sideport Test Team (${teamId})`;
      leaf.setSubject([
        { name: 'commonName', value: commonName },
        { name: 'organizationalUnitName', value: teamId },
        { name: 'organizationName', value: 'Sideport Test Team' },
        { name: 'countryName', value: 'US' },
      ]);
      leaf.setIssuer(subject);
      leaf.setExtensions([
        { name: 'basicConstraints', cA: false, critical: true },
        { name: 'keyUsage', digitalSignature: true, critical: true },
        { name: 'extKeyUsage', codeSigning: true, critical: true },
        authorityInfoAccess(access),
      ]);
      leaf.sign(keys.privateKey, forge.md.sha256.create());
      const der = Buffer.from(forge.asn1.toDer(forge.pki.certificateToAsn1(leaf)).getBytes(), 'binary');
      return {
        der,
        commonName,
        serialNumber: leaf.serialNumber.toUpperCase(),
        notAfter: leaf.validity.notAfter,
      };
    },
  };
}

/**
 * Authority Information Access (RFC 5280 4.2.2.1), as Apple's distribution certificates carry it:
 * the OCSP responder (when one is set) and where the issuer's certificate is.
 */
function authorityInfoAccess(access: { ocspUrl?: string | undefined; caIssuersUrl: string }) {
  const { asn1 } = forge;
  const description = (method: string, uri: string) =>
    asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [
      asn1.create(asn1.Class.UNIVERSAL, asn1.Type.OID, false, asn1.oidToDer(method).getBytes()),
      asn1.create(asn1.Class.CONTEXT_SPECIFIC, 6, false, uri), // uniformResourceIdentifier [6] IA5String
    ]);
  const descriptions = [
    ...(access.ocspUrl ? [description('1.3.6.1.5.5.7.48.1', access.ocspUrl)] : []),
    description('1.3.6.1.5.5.7.48.2', access.caIssuersUrl),
  ];
  return {
    id: '1.3.6.1.5.5.7.1.1',
    value: asn1.toDer(asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, descriptions)).getBytes(),
  };
}

function ajvText(validate: ValidateFunction): string {
  return (validate.errors ?? [])
    .slice(0, 3)
    .map((e) => `${e.instancePath || '/'} ${e.message ?? ''}`)
    .join('; ');
}

function safeJson(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new Error('request body over 1 MiB');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (body === undefined) {
    res.writeHead(status, headers).end();
    return;
  }
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}
