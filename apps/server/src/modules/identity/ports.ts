/**
 * The identity module's ports: what an identity that signs offers (the dev identity in
 * dev-identity-provider.ts, an Apple developer account in apple-identity.ts), the certificates it
 * answers with, and what the signing service asks of the pool of developer accounts
 * (pool/account-pool.ts). Types only, so every side imports them and none imports another.
 */
import type { IdentitySource } from '@sideport/ipa';
import type { DeviceRegistrar } from '../devices/registration.js';

/**
 * Who signs: the operator's Apple identity (App Store Connect) or Sideport's dev identity. Each
 * makes the provisioning profile that lists a user's devices, and is what the devices domain's
 * registration registers a paid device with (DeviceRegistrar): Apple's registers it on the
 * developer account, the dev identity has nothing to register.
 */
export interface SigningIdentityProvider extends DeviceRegistrar {
  readonly kind: 'dev' | 'apple';
  /** For the admin console and the start-up line. */
  readonly description: string;
  source(): Promise<IdentitySource>;
  /**
   * A profile listing the user's devices: for the wildcard App ID, or with `appId` for an explicit
   * one made for it (only where `makesExplicitAppIds`).
   */
  makeProfile(request: { userId: string; udids: readonly string[]; appId?: ExplicitAppId }): Promise<{
    bytes: Buffer;
    uuid: string;
    expiresAt: Date;
    appleProfileId?: string;
  }>;
  /** Whether it makes explicit App IDs with capabilities (App Store Connect's API; not the dev identity). */
  readonly makesExplicitAppIds?: boolean;
  /** Deletes a profile that a new one replaced (Apple's; nothing to do for the dev identity). */
  dropProfile?(appleProfileId: string): Promise<void>;
  /** What the admin console shows; never calls Apple. */
  details?(): Promise<IdentityDetails>;
  /**
   * Checked at start: SIGN_P12's chain is completed up to a root (fetching its issuer once when
   * the .p12 lacks it), or the start is refused with a sentence saying which issuer is missing.
   */
  prepare?(): Promise<void>;
  /** The CA that issued the signing certificate, PEM: the dev identity's own (Apple's is public). */
  caCertificatePem?(): Promise<string>;
  /** The certificate source() signs with now (made on first use, as source() would). */
  currentCertificate(): Promise<CurrentCertificate>;
  /**
   * Has a new certificate made in place of the current one (revoked, or about to expire): under a
   * database lock, so several processes that notice at once make one. With `ifCurrent`, nothing is
   * made when the current certificate is another already (someone replaced it first).
   */
  replaceCertificate(reason: string, options?: { ifCurrent?: string }): Promise<CertificateReplacement>;
  /**
   * The Feather certificate (GET /api/feather/cert): a certificate of its own on the same team,
   * never the one source() signs with, so revoking it leaves every install of the service's signs
   * working. Made on first use.
   */
  featherCertificate(): Promise<FeatherCertificate>;
  /** The Feather certificate as kept, without making one (the admin console); undefined before the first. */
  featherDetails(): Promise<IdentityDetails | undefined>;
  /** A new Feather certificate in place of the current one (an admin's rotation after a leak). */
  rotateFeatherCertificate(): Promise<FeatherCertificate>;
  /** A profile for the Feather certificate listing `udids` (Feather signs with both). */
  makeFeatherProfile(request: { userId: string; udids: readonly string[] }): Promise<Buffer>;
}

/**
 * An explicit App ID a DUP copy is signed for: its bundle id and the App Store Connect capability
 * types to enable on it (packages/ipa, creatableCapabilities).
 */
export interface ExplicitAppId {
  readonly identifier: string;
  readonly capabilityTypes: readonly string[];
}

/** The Feather certificate and its key. */
export interface FeatherCertificate {
  source: IdentitySource;
  certificate: CurrentCertificate;
}

/** A signing certificate as preflight and recovery need it. */
export interface CurrentCertificate {
  pem: string;
  /** SHA-256 of its DER, lower-case hex: how artifacts, profiles and the OCSP cache name it. */
  fingerprint: string;
  /** Upper-case hex. */
  serial: string;
  notBefore: Date;
  notAfter: Date;
  /** Its issuer, when the identity holds it (the dev CA, a .p12's chain); fetched from the certificate's AIA otherwise. */
  issuerPem?: string;
}

export interface CertificateReplacement {
  certificate: CurrentCertificate;
  /** False when `ifCurrent` was no longer current: another process replaced it first. */
  replaced: boolean;
  /** What changed beyond the certificate, in a sentence (SIGN_P12 no longer used). */
  note?: string;
}

export interface IdentityDetails {
  teamId: string | null;
  /** The signing certificate's common name; null until one exists (made on first use). */
  certificateName: string | null;
  certificateExpiresAt: Date | null;
  /** Upper-case hex; null until one exists. */
  certificateSerial?: string | null;
  /** SHA-256 of its DER; null until one exists. */
  certificateFingerprint?: string | null;
  /**
   * The certificates its signatures carry: the signing certificate, then its issuers up to the
   * root (as far as they are known without fetching); empty until one exists.
   */
  certificateChain?: { name: string; expiresAt: Date }[];
}

/**
 * With several developer accounts (pool/account-pool.ts): the identity of the account a user's
 * devices are on signs for them, and a profile another account made is deleted there.
 */
export interface IdentityPlacement {
  /** undefined when the user has no Registered device. */
  identityOf(userId: string): Promise<{ provider: SigningIdentityProvider; accountId: number } | undefined>;
  /** The identity of an account by its id; undefined when this process has no key for it. */
  providerOf(accountId: number): Promise<SigningIdentityProvider | undefined>;
  /** Every account's identity this process has a key for, the first account first. */
  providers(): Promise<SigningIdentityProvider[]>;
}
