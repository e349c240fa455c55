import { pgTable, text, timestamp } from 'drizzle-orm/pg-core';

export type OcspStatus = 'good' | 'revoked' | 'unknown';

/**
 * Every certificate an identity has signed with, by its SHA-256 fingerprint: what an install
 * preflight needs to ask its responder (the certificate and its issuer), its revocation status as
 * the responder last said it (OCSP, RFC 6960; kept until `nextCheckAt`, so the processes share one
 * answer), and when recovery replaced it (docs/sign-service.md, Revocation and expiry recovery).
 */
export const signingCertificates = pgTable('signing_certificates', {
  fingerprint: text('fingerprint').primaryKey(),
  /** The identity that signed with it: 'apple' or 'dev' (who a revocation is said to come from). */
  identityKind: text('identity_kind').$type<'dev' | 'apple'>().notNull(),
  certPem: text('cert_pem').notNull(),
  /** Its issuer (the OCSP request names it and the answer is checked against it); null until known. */
  issuerPem: text('issuer_pem'),
  /** Upper-case hex, as openssl and Apple write serials. */
  serial: text('serial').notNull(),
  notBefore: timestamp('not_before', { withTimezone: true }).notNull(),
  notAfter: timestamp('not_after', { withTimezone: true }).notNull(),
  firstUsedAt: timestamp('first_used_at', { withTimezone: true }).notNull(),
  /** Null while it is the identity's certificate; set when recovery made another. */
  replacedAt: timestamp('replaced_at', { withTimezone: true }),
  replacedReason: text('replaced_reason'),
  /** The responder's last answer; null: never asked (no responder address: 'not checked'). */
  ocspStatus: text('ocsp_status').$type<OcspStatus>(),
  revokedAt: timestamp('revoked_at', { withTimezone: true }),
  /** When the responder last answered. */
  checkedAt: timestamp('checked_at', { withTimezone: true }),
  /** Until when that answer is used (its nextUpdate, capped by OCSP_CACHE_MINUTES). */
  nextCheckAt: timestamp('next_check_at', { withTimezone: true }),
  /** Why the last attempt to ask failed (the responder unreachable, an answer that does not verify). */
  ocspError: text('ocsp_error'),
});
