// zod/mini: see admin.ts.
import * as z from 'zod/mini';

/** GET /api/admin/devices: a device waiting for registration, as the admin console shows it. */
export const adminDevice = z.object({
  id: z.string(),
  /** The owner's id. */
  user: z.string(),
  product: z.string(),
  udid: z.string(),
  /** DEVICE_NAME as the device sent it at enrollment. */
  name: z.nullable(z.string()),
  /** As App Store Connect names platforms: IOS (iPhone, iPad) or MAC_OS. */
  platform: z.enum(['IOS', 'MAC_OS']),
  status: z.enum(['Add', 'Expired', 'Registered', 'Process', 'Pending']),
  /** Registration years paid and not yet applied. */
  paid_years: z.int(),
  /** Why the last registration attempt failed (Apple's error, in a sentence); null when none did. */
  reason: z.nullable(z.string()),
  attempts: z.int(),
  /** When a failed registration is tried again by itself; null: it waits for an admin's retry. */
  retry_at: z.nullable(z.string()),
  /** A Mac in Process waiting for an admin's confirmation (docs/product.md: 'an extra process follows payment'). */
  awaiting_confirmation: z.boolean(),
  /** The current expiry, for a renewal. */
  expired_date: z.nullable(z.string()),
  created_at: z.string(),
});
export type AdminDevice = z.infer<typeof adminDevice>;
export const adminDevices = z.array(adminDevice);

/** GET /api/admin/identity: who signs. */
export const signingIdentityInfo = z.object({
  /** 'apple': the operator's developer account; 'dev': Sideport's own CA, for pipeline runs only. */
  kind: z.enum(['dev', 'apple']),
  description: z.string(),
  /** False for the dev identity: real devices do not install what it signs. */
  installable: z.boolean(),
  team_id: z.nullable(z.string()),
  /** The signing certificate's common name; null until it is made (on first use). */
  certificate_name: z.nullable(z.string()),
  certificate_expires_at: z.nullable(z.string()),
  /** Upper-case hex, as Apple's developer site shows it; null until the certificate is made. */
  certificate_serial: z.nullable(z.string()),
  /** Its revocation status as its issuer's OCSP responder last said it; 'not checked' when none was asked. */
  certificate_status: z.enum(['good', 'revoked', 'unknown', 'not checked']),
  /** When the responder last answered; null: never. */
  certificate_checked_at: z.nullable(z.string()),
  /** When it was revoked (revoked only). */
  certificate_revoked_at: z.nullable(z.string()),
  /**
   * What every signature carries, as codesign writes it: the signing certificate, its issuer (for
   * Apple's, the WWDR intermediate) and the root; empty until the certificate is made.
   */
  certificate_chain: z.array(z.object({ name: z.string(), expires_at: z.string() })),
  /**
   * The Feather certificate: the one GET /api/feather/cert hands out in a .p12, a certificate of
   * its own (never the one that signs the service's apps). Null until it is made (on first use).
   */
  feather_certificate_name: z.nullable(z.string()),
  feather_certificate_serial: z.nullable(z.string()),
  feather_certificate_expires_at: z.nullable(z.string()),
});
export type SigningIdentityInfo = z.infer<typeof signingIdentityInfo>;
