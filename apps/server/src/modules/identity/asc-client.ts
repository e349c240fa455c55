/**
 * App Store Connect API client for what the sign service needs from the operator's Apple developer
 * account: devices, one wildcard bundle id, ad-hoc profiles, distribution certificates.
 *
 * Wire format: JSON:API over HTTPS, authenticated by an ES256 JWT the client makes from the team's
 * API key (.p8) and refreshes before it expires. Every call is bounded by a timeout; lists follow
 * `links.next` (only to the same origin: the token must not travel elsewhere). Apple's errors
 * (`{"errors":[{status, code, title, detail}]}`) become one AscError with a kind the service can act
 * on and a sentence an admin can act on. Neither ever contains the key or the token.
 */
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { importPKCS8, SignJWT, type CryptoKey } from 'jose';
import forge from 'node-forge';
import { z } from 'zod';
import { AppError } from '../../platform/errors.js';
import { parseRetryAfter } from '../../platform/faults.js';
import { generateRsaKeyPair } from '../../platform/pki.js';
import { isSameUdid } from '../devices/udid.js';

export const ASC_DEFAULT_BASE_URL = 'https://api.appstoreconnect.apple.com';
export const ASC_AUDIENCE = 'appstoreconnect-v1';
/** Apple refuses tokens that live longer than 20 minutes. */
export const ASC_MAX_TOKEN_SECONDS = 20 * 60;

export type AscPlatform = 'IOS' | 'MAC_OS';

export interface AscKey {
  /** The key's id, shown beside it in App Store Connect (Users and Access > Integrations). */
  readonly keyId: string;
  /** The team's issuer id (a UUID) from the same page. */
  readonly issuerId: string;
  /** The downloaded AuthKey_<keyId>.p8: a PKCS#8 P-256 private key in PEM. */
  readonly privateKeyPem: string;
}

export interface AscClientOptions {
  readonly key: AscKey;
  /** ASC_BASE_URL; Apple's when absent. */
  readonly baseUrl?: string;
  /** Longest wait for one HTTP call, in milliseconds. */
  readonly timeoutMs?: number;
  /** How long each token is valid (at most 20 minutes); a token is reused until a minute before. */
  readonly tokenLifetimeSeconds?: number;
  /** Lists longer than this many pages are refused (a loop in Apple's links, or a runaway account). */
  readonly maxPages?: number;
  readonly clock?: () => Date;
  readonly fetchImpl?: typeof fetch;
}

export interface AscDevice {
  readonly id: string;
  readonly name: string;
  readonly udid: string;
  readonly platform: string;
  readonly status: string;
  readonly deviceClass?: string;
  readonly model?: string;
  readonly addedDate?: Date;
}

export interface AscBundleId {
  readonly id: string;
  readonly identifier: string;
  readonly name: string;
  readonly platform: string;
  readonly seedId?: string;
}

export interface AscProfile {
  readonly id: string;
  readonly name: string;
  readonly uuid?: string;
  readonly profileType?: string;
  readonly profileState?: string;
  readonly platform?: string;
  readonly createdDate?: Date;
  readonly expirationDate?: Date;
  /** The .mobileprovision, decoded from profileContent. */
  readonly content?: Buffer;
}

export interface AscCertificate {
  readonly id: string;
  readonly name?: string;
  readonly displayName?: string;
  readonly certificateType?: string;
  readonly serialNumber?: string;
  readonly platform?: string;
  readonly expirationDate?: Date;
  /** DER, decoded from certificateContent. */
  readonly content?: Buffer;
}

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

// ---------------------------------------------------------------------------------------------
// Errors

export type AscErrorKind = 'DEVICE_LIMIT' | 'INVALID_UDID' | 'KEY_REJECTED' | 'UNAVAILABLE' | 'OTHER';

/** Any failure of an App Store Connect call. `message` is the admin console's sentence. */
export class AscError extends AppError {
  constructor(
    readonly kind: AscErrorKind,
    message: string,
    /** Apple's status, code and detail, when Apple answered (none for timeouts and unreachable hosts). */
    readonly apple?: { status: number; code?: string; detail?: string },
    options?: { cause?: unknown; retryAfterMs?: number },
  ) {
    const { retryAfterMs, ...rest } = options ?? {};
    super(`ASC_${kind}`, message, {
      ...rest,
      // A request refused for it tells its client the same wait.
      ...(retryAfterMs === undefined
        ? {}
        : { headers: { 'retry-after': String(Math.ceil(retryAfterMs / 1000)) } }),
    });
    this.name = 'AscError';
    this.retryAfterMs = retryAfterMs;
  }
  /** How long Apple asked to be left alone (its Retry-After on a 429 or 5xx), when it said. */
  readonly retryAfterMs: number | undefined;
}

export function isAscError(err: unknown): err is AscError {
  return err instanceof AscError;
}

const appleErrorSchema = z.object({
  errors: z
    .array(
      z.object({
        status: z.string().optional(),
        code: z.string().optional(),
        title: z.string().optional(),
        detail: z.string().optional(),
        source: z
          .object({ pointer: z.string().optional(), parameter: z.string().optional() })
          .partial()
          .optional(),
      }),
    )
    .min(1),
});
type AppleError = z.infer<typeof appleErrorSchema>['errors'][number];

/** Apple's own words, short and single-line; anything token-shaped is cut out to be safe. */
function quote(error: AppleError | undefined): string {
  const text = [error?.title, error?.detail].filter(Boolean).join(' - ') || 'no explanation';
  const clean = text
    .replace(/eyJ[\w-]+\.[\w-]+\.[\w-]*/g, '[token]')
    .replace(/\s+/g, ' ')
    .trim();
  return clean.length > 300 ? `${clean.slice(0, 297)}...` : clean;
}

function appleError(status: number, body: unknown, keyId: string, retryAfterMs?: number): AscError {
  const parsed = appleErrorSchema.safeParse(body);
  const first = parsed.success ? parsed.data.errors[0] : undefined;
  const apple = {
    status,
    ...(first?.code === undefined ? {} : { code: first.code }),
    ...(first?.detail === undefined ? {} : { detail: quote({ detail: first.detail }) }),
  };
  // Apple's words in quotes only when its answer held some: a body that is no error document is not quoted as Apple's.
  const said = first?.title || first?.detail ? `Apple said: "${quote(first)}"` : 'Apple gave no explanation';
  const detail = `${first?.title ?? ''} ${first?.detail ?? ''}`;
  if (status === 401) {
    return new AscError(
      'KEY_REJECTED',
      `App Store Connect refused API key ${keyId}: it is revoked or expired, or it does not match ASC_ISSUER_ID and ASC_PRIVATE_KEY, or this server's clock is wrong. ` +
        'Create a key in App Store Connect (Users and Access > Integrations) and set ASC_KEY_ID, ASC_ISSUER_ID and ASC_PRIVATE_KEY.',
      apple,
    );
  }
  // Apple names the family: 'iPhone', 'iPad', but also 'Apple TV' and 'Apple Watch', in two words.
  if (status === 403 && /maximum number of (registered )?[\w ]*devices/i.test(detail)) {
    return new AscError(
      'DEVICE_LIMIT',
      `The Apple developer account has reached its device limit for this membership year (${said}). ` +
        'Removed devices still count until the membership renews; register the device then, or on another account.',
      apple,
    );
  }
  if (status === 403) {
    return new AscError(
      'KEY_REJECTED',
      `App Store Connect does not let API key ${keyId} do this (${said}). Give the key the Admin role in App Store Connect (Users and Access > Integrations).`,
      apple,
    );
  }
  const pointsAtUdid = first?.source?.pointer === '/data/attributes/udid' || /'udid'|\budid\b/i.test(detail);
  if (
    status === 409 &&
    first?.code?.startsWith('ENTITY_ERROR') &&
    pointsAtUdid &&
    !/already exists/i.test(detail)
  ) {
    return new AscError(
      'INVALID_UDID',
      `Apple refused the device's UDID as invalid (${said}). Ask its owner to enroll the device again from the device itself.`,
      apple,
    );
  }
  if (status === 429 || status >= 500) {
    return new AscError(
      'UNAVAILABLE',
      `App Store Connect is unavailable right now (HTTP ${status}, ${said}). Please retry later.`,
      apple,
      retryAfterMs === undefined ? {} : { retryAfterMs },
    );
  }
  return new AscError(
    'OTHER',
    `App Store Connect refused the request (HTTP ${status}${first?.code ? `, ${first.code}` : ''}; ${said}).`,
    apple,
  );
}

const isAlreadyExists = (err: unknown): err is AscError =>
  err instanceof AscError &&
  err.apple?.status === 409 &&
  /already exists|already been used|DUPLICATE/i.test(`${err.apple.code ?? ''} ${err.apple.detail ?? ''}`);

// ---------------------------------------------------------------------------------------------
// Response parsers: lenient where Apple's recorded answers differ from its schema (fastlane's
// recordings carry values outside the documented enums), strict on what the client relies on.

const dateOrUndefined = z
  .string()
  .nullish()
  .transform((value) => {
    if (value === null || value === undefined) return undefined;
    const date = new Date(value);
    return Number.isNaN(date.getTime()) ? undefined : date;
  });
const text = z
  .string()
  .nullish()
  .transform((v) => v ?? undefined);
const base64 = z
  .string()
  .nullish()
  .transform((v) => (v === null || v === undefined ? undefined : Buffer.from(v, 'base64')));

function resource<A extends z.ZodRawShape>(type: string, attributes: A) {
  return z.object({ type: z.literal(type), id: z.string().min(1), attributes: z.object(attributes) });
}

const deviceResource = resource('devices', {
  name: z.string(),
  udid: z.string().min(1),
  platform: z.string(),
  status: z.string(),
  deviceClass: text,
  model: text,
  addedDate: dateOrUndefined,
}).transform(({ id, attributes: a }): AscDevice => dropUndefined({ id, ...a }));

const bundleIdResource = resource('bundleIds', {
  identifier: z.string().min(1),
  name: z.string(),
  platform: z.string(),
  seedId: text,
}).transform(({ id, attributes: a }): AscBundleId => dropUndefined({ id, ...a }));

const profileResource = resource('profiles', {
  name: z.string(),
  uuid: text,
  profileType: text,
  profileState: text,
  platform: text,
  createdDate: dateOrUndefined,
  expirationDate: dateOrUndefined,
  profileContent: base64,
}).transform(({ id, attributes: { profileContent, ...a } }): AscProfile =>
  dropUndefined({ id, ...a, content: profileContent }),
);

const certificateResource = resource('certificates', {
  name: text,
  displayName: text,
  certificateType: text,
  serialNumber: text,
  platform: text,
  expirationDate: dateOrUndefined,
  certificateContent: base64,
}).transform(({ id, attributes: { certificateContent, ...a } }): AscCertificate =>
  dropUndefined({ id, ...a, content: certificateContent }),
);

export interface AscPage<T> {
  readonly data: T[];
  /** links.next: the next page's absolute URL, when there is one. */
  readonly next?: string;
}

function documentParser<T>(item: z.ZodType<T>) {
  const schema = z.object({ data: item });
  return (body: unknown): T => parseOrThrow(schema, body).data;
}

function pageParser<T>(item: z.ZodType<T>) {
  const schema = z.object({
    data: z.array(item),
    links: z.object({ next: z.string().nullish() }).partial().optional(),
  });
  return (body: unknown): AscPage<T> => {
    const parsed = parseOrThrow(schema, body);
    return parsed.links?.next ? { data: parsed.data, next: parsed.links.next } : { data: parsed.data };
  };
}

function parseOrThrow<T>(schema: z.ZodType<T>, body: unknown): T {
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    const where = parsed.error.issues[0]?.path.join('.') || 'the document';
    throw new AscError(
      'OTHER',
      `App Store Connect answered in a shape Sideport does not read (at ${where}).`,
      undefined,
      { cause: parsed.error },
    );
  }
  return parsed.data;
}

export const parseDeviceResponse = documentParser(deviceResource);
export const parseDevicesResponse = pageParser(deviceResource);
export const parseBundleIdResponse = documentParser(bundleIdResource);
export const parseBundleIdsResponse = pageParser(bundleIdResource);
export const parseProfileResponse = documentParser(profileResource);
export const parseProfilesResponse = pageParser(profileResource);
export const parseCertificateResponse = documentParser(certificateResource);
export const parseCertificatesResponse = pageParser(certificateResource);

// ---------------------------------------------------------------------------------------------
// The client

const MAX_BODY_BYTES = 16 * 1024 * 1024;

export function createAscClient(options: AscClientOptions): AscClient {
  const { key } = options;
  const base = new URL((options.baseUrl ?? ASC_DEFAULT_BASE_URL).replace(/\/+$/, ''));
  const timeoutMs = options.timeoutMs ?? 20_000;
  const lifetime = Math.min(options.tokenLifetimeSeconds ?? 15 * 60, ASC_MAX_TOKEN_SECONDS);
  const maxPages = options.maxPages ?? 100;
  const clock = options.clock ?? (() => new Date());
  const fetchImpl = options.fetchImpl ?? fetch;

  let signingKey: Promise<CryptoKey> | undefined;
  let cached: { token: string; expiresAt: number } | undefined;

  async function token(): Promise<string> {
    const now = Math.floor(clock().getTime() / 1000);
    if (cached && now < cached.expiresAt - 60) return cached.token;
    signingKey ??= importPKCS8(normalizePem(key.privateKeyPem), 'ES256').catch((err: unknown) => {
      signingKey = undefined;
      throw new AscError(
        'KEY_REJECTED',
        'ASC_PRIVATE_KEY is not an App Store Connect key: expected the AuthKey .p8 file (a PEM "PRIVATE KEY" on the P-256 curve).',
        undefined,
        { cause: err },
      );
    });
    const jwt = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: key.keyId, typ: 'JWT' })
      .setIssuer(key.issuerId)
      .setAudience(ASC_AUDIENCE)
      .setIssuedAt(now)
      .setExpirationTime(now + lifetime)
      .sign(await signingKey);
    cached = { token: jwt, expiresAt: now + lifetime };
    return jwt;
  }

  function urlFor(pathOrUrl: string, query?: Record<string, string | undefined>): URL {
    const url = /^https?:\/\//.test(pathOrUrl)
      ? new URL(pathOrUrl)
      : new URL(base.pathname.replace(/\/$/, '') + pathOrUrl, base);
    if (url.origin !== base.origin) {
      throw new AscError(
        'OTHER',
        `App Store Connect linked to another host (${url.origin}); Sideport follows links to ${base.origin} only.`,
      );
    }
    for (const [name, value] of Object.entries(query ?? {}))
      if (value !== undefined) url.searchParams.set(name, value);
    return url;
  }

  async function call(
    method: string,
    pathOrUrl: string,
    init: { query?: Record<string, string | undefined>; body?: unknown } = {},
  ) {
    const url = urlFor(pathOrUrl, init.query);
    const headers: Record<string, string> = {
      authorization: `Bearer ${await token()}`,
      accept: 'application/json',
    };
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    let raw: string;
    try {
      response = await fetchImpl(url, {
        method,
        headers,
        ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
        signal: AbortSignal.timeout(timeoutMs),
        redirect: 'error',
      });
      raw = await readCapped(response);
    } catch (err) {
      if (err instanceof AscError) throw err;
      const timedOut = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError');
      throw new AscError(
        'UNAVAILABLE',
        timedOut
          ? `App Store Connect did not answer within ${timeoutMs >= 1000 ? `${Math.round(timeoutMs / 1000)} s` : `${timeoutMs} ms`} (${method} ${url.pathname}). Please retry later.`
          : `App Store Connect could not be reached at ${base.origin} (${method} ${url.pathname}). Please retry later.`,
        undefined,
        { cause: err },
      );
    }
    let body: unknown;
    if (raw !== '') {
      try {
        body = JSON.parse(raw);
      } catch (err) {
        if (response.ok)
          throw new AscError(
            'OTHER',
            `App Store Connect answered ${method} ${url.pathname} with something other than JSON.`,
            undefined,
            { cause: err },
          );
      }
    }
    if (!response.ok)
      throw appleError(
        response.status,
        body,
        key.keyId,
        parseRetryAfter(response.headers.get('retry-after'), clock()),
      );
    return body;
  }

  async function readCapped(response: Response): Promise<string> {
    const declared = Number(response.headers.get('content-length') ?? 0);
    if (declared > MAX_BODY_BYTES) {
      await response.body?.cancel();
      throw new AscError(
        'OTHER',
        `App Store Connect's answer (${declared} bytes) is larger than Sideport reads.`,
      );
    }
    const text = await response.text();
    if (text.length > MAX_BODY_BYTES)
      throw new AscError('OTHER', "App Store Connect's answer is larger than Sideport reads.");
    return text;
  }

  async function listAll<T>(
    path: string,
    query: Record<string, string | undefined>,
    parse: (body: unknown) => AscPage<T>,
  ): Promise<T[]> {
    const items: T[] = [];
    let next: string | undefined;
    let page = parse(await call('GET', path, { query: { ...query, limit: '200' } }));
    for (let pages = 1; ; pages++) {
      items.push(...page.data);
      next = page.next;
      if (next === undefined) return items;
      if (pages >= maxPages)
        throw new AscError(
          'OTHER',
          `App Store Connect's list at ${path} runs past ${maxPages} pages; Sideport stopped reading it.`,
        );
      page = parse(await call('GET', next));
    }
  }

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

/** Keys pasted into an environment variable often arrive with literal "\n" for line breaks. */
function normalizePem(pem: string): string {
  return pem.includes('\\n') ? pem.replace(/\\n/g, '\n') : pem;
}

function dropUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
