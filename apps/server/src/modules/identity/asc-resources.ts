/**
 * The App Store Connect resources Sideport reads (devices, bundle ids and their capabilities,
 * profiles, certificates) and
 * their parsers: JSON:API documents and pages, read leniently where Apple's recorded answers
 * differ from its schema (fastlane's recordings carry values outside the documented enums),
 * strictly on what the client relies on.
 */
import { z } from 'zod';
import { AscError } from './asc-errors.js';

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

/** A capability enabled on a bundle id (an App ID). */
export interface AscBundleIdCapability {
  readonly id: string;
  /** Apple's CapabilityType: 'PUSH_NOTIFICATIONS', 'ASSOCIATED_DOMAINS' ... */
  readonly capabilityType: string;
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

const capabilityResource = resource('bundleIdCapabilities', {
  capabilityType: z.string().min(1),
}).transform(({ id, attributes: a }): AscBundleIdCapability => ({ id, capabilityType: a.capabilityType }));

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
export const parseBundleIdCapabilityResponse = documentParser(capabilityResource);
export const parseBundleIdCapabilitiesResponse = pageParser(capabilityResource);
export const parseProfileResponse = documentParser(profileResource);
export const parseProfilesResponse = pageParser(profileResource);
export const parseCertificateResponse = documentParser(certificateResource);
export const parseCertificatesResponse = pageParser(certificateResource);

function dropUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
